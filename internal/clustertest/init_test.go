package clustertest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/protocol"
	"github.com/kcleanup/kcleanup/topicconfig"
)

// TestInitOnThreeBrokersMakesDurableTopics: `kcleanup init` with the default
// --replication-factor -1 on three brokers creates the control topic and the mirror with three
// replicas, min.insync.replicas=2 and unclean leader election off (the broker default of
// min.insync.replicas is 1 here, as on most clusters), and does not warn about its own work.
func TestInitOnThreeBrokersMakesDurableTopics(t *testing.T) {
	s := newScene(t)
	mirror := s.Topic + ".flink-cleanup"
	s.DeleteAtEnd(mirror)
	out := s.MustKcleanup(s.K.Bootstrap, "init", "--topic", s.Topic, "--mirror-topic", mirror)
	if strings.Contains(out, "min.insync.replicas=1") {
		t.Errorf("init warns about the topics it created itself:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range []string{s.Ctl, mirror} {
		if r := s.partition(topic); len(r.Replicas) != 3 {
			t.Errorf("%s has replicas %v, want three", topic, r.Replicas)
		}
		cfg, err := s.C.TopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range map[string]string{"min.insync.replicas": "2", "unclean.leader.election.enable": "false"} {
			if cfg[k] != want {
				t.Errorf("%s: %s=%q, want %q\ninit said:\n%s", topic, k, cfg[k], want, out)
			}
		}
	}
	s.Check()
}

// TestDoctorWarnsOnAFragileControlTopic: on three brokers, doctor warns, with the command that
// fixes it, about a control topic with one replica and about one with three replicas but
// min.insync.replicas=1.
func TestDoctorWarnsOnAFragileControlTopic(t *testing.T) {
	s := newScene(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := func(ctl string, rf int16, configs map[string]string) {
		cfg := map[string]*string{}
		for k, v := range configs {
			cfg[k] = &v
		}
		resp, err := s.Adm.CreateTopic(ctx, 1, rf, cfg, ctl)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		rf      int16
		configs map[string]string
		want    []string
	}{
		{"rf1", 1, topicconfig.CreateSettings(), []string{"replication factor is 1", "kafka-reassign-partitions", "min.insync.replicas=2"}},
		{"minisr1", 3, withConfig(topicconfig.CreateSettings(), "min.insync.replicas", "1"),
			[]string{"min.insync.replicas=1: one broker's loss could lose a committed decision", "--add-config min.insync.replicas=2"}},
	} {
		// A control topic of its own per case: a deleted one lingers in clients' metadata.
		s.Ctl = protocol.ControlTopicFor(s.Topic) + "." + tc.name
		s.DeleteAtEnd(s.Ctl)
		create(s.Ctl, tc.rf, tc.configs)
		s.waitISR(s.Ctl, int(tc.rf))
		out, _, _ := s.Kcleanup(nil, s.K.Bootstrap, "doctor", "--topic", s.Topic, "--control-topic", s.Ctl)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: doctor does not say %q:\n%s", tc.name, w, out)
			}
		}
		if !strings.Contains(out, "WARN ") && !strings.Contains(out, "BLOCK ") {
			t.Errorf("%s: doctor neither warns nor blocks:\n%s", tc.name, out)
		}
		s.Check()
	}
}

func withConfig(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for key, val := range m {
		if key != k {
			out[key] = val
		}
	}
	return out
}
