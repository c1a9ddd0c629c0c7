package topicconfig

import (
	"strings"
	"testing"
)

// created is what init creates, as the broker reports it.
func created() map[string]string {
	out := CreateSettings()
	out["min.cleanable.dirty.ratio"] = "0.01" // irrelevant to safety: never reported
	return out
}

func TestSettingsOfACreatedControlTopicAreSafe(t *testing.T) {
	if ps := ControlTopic("c", 1, created(), "b:9092"); len(ps) != 0 {
		t.Fatalf("problems on a topic init created: %+v", ps)
	}
}

func TestSettingsRules(t *testing.T) {
	alter := "kafka-configs --bootstrap-server b:9092 --alter --entity-type topics --entity-name c --add-config "
	for _, tc := range []struct {
		name       string
		partitions int
		set        map[string]string
		unset      []string
		setting    string
		blocks     bool
		fix        string
		message    string
	}{
		{"two partitions", 2, nil, nil, "partitions", true, "kcleanup init", "has 2 partitions"},
		{"policy delete", 1, map[string]string{"cleanup.policy": "delete"}, nil, "cleanup.policy", true, alter + "cleanup.policy=compact", `"delete"`},
		{"policy compact,delete", 1, map[string]string{"cleanup.policy": "compact,delete"}, nil, "cleanup.policy", true, alter + "cleanup.policy=compact", "exactly compact"},
		// A control topic created with cleanup.policy=compact only inherits the broker's 0.
		{"compaction lag 0", 1, map[string]string{"min.compaction.lag.ms": "0"}, nil, "min.compaction.lag.ms", true,
			alter + "min.compaction.lag.ms=604800000", "at least 86400000"},
		{"compaction lag not reported", 1, nil, []string{"min.compaction.lag.ms"}, "min.compaction.lag.ms", true,
			alter + "min.compaction.lag.ms=604800000", "min.compaction.lag.ms is 0"},
		{"compaction lag just short", 1, map[string]string{"min.compaction.lag.ms": "86399999"}, nil, "min.compaction.lag.ms", true, "", ""},
		{"compaction lag not a number", 1, map[string]string{"min.compaction.lag.ms": "soon"}, nil, "min.compaction.lag.ms", true, "", ""},
		{"delete retention an hour", 1, map[string]string{"delete.retention.ms": "3600000"}, nil, "delete.retention.ms", true,
			alter + "delete.retention.ms=604800000", "evidence"},
		{"small records", 1, map[string]string{"max.message.bytes": "1048588"}, nil, "max.message.bytes", false,
			alter + "max.message.bytes=16777216", "1048588"},
		{"create time", 1, map[string]string{"message.timestamp.type": "CreateTime"}, nil, "message.timestamp.type", false,
			alter + "message.timestamp.type=LogAppendTime", "clocks"},
		{"unclean election", 1, map[string]string{"unclean.leader.election.enable": "true"}, nil, "unclean.leader.election.enable", false,
			alter + "unclean.leader.election.enable=false", "unclean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := created()
			for k, v := range tc.set {
				cfg[k] = v
			}
			for _, k := range tc.unset {
				delete(cfg, k)
			}
			ps := ControlTopic("c", tc.partitions, cfg, "b:9092")
			if len(ps) != 1 {
				t.Fatalf("want one problem, got %+v", ps)
			}
			p := ps[0]
			if p.Setting != tc.setting || p.Blocks != tc.blocks || !strings.Contains(p.Fix, tc.fix) || !strings.Contains(p.Message, tc.message) {
				t.Fatalf("problem %+v", p)
			}
			if len(Blocking(ps)) != map[bool]int{true: 1, false: 0}[tc.blocks] {
				t.Fatalf("Blocking(%+v)", ps)
			}
		})
	}
}

// The broker's defaults (a delete.retention.ms it reports as 86400000) pass
// that rule: only the compaction lag needs changing on a topic created with
// cleanup.policy=compact alone.
func TestSettingsOfAControlTopicCreatedWithCompactOnly(t *testing.T) {
	kafkaDefaults := map[string]string{
		"cleanup.policy": "compact", "min.compaction.lag.ms": "0", "delete.retention.ms": "86400000",
		"max.message.bytes": "1048588", "message.timestamp.type": "CreateTime", "unclean.leader.election.enable": "false",
	}
	var blocking []string
	for _, p := range Blocking(ControlTopic("c", 1, kafkaDefaults, "b:9092")) {
		blocking = append(blocking, p.Setting)
	}
	if strings.Join(blocking, ",") != "min.compaction.lag.ms" {
		t.Fatalf("blocking settings %v, want min.compaction.lag.ms only", blocking)
	}
}

// TestDataTopicRules: compact,delete in any order and spelling, retention off;
// anything else blocks with the exact fix.
func TestDataTopicRules(t *testing.T) {
	ok := map[string]string{"cleanup.policy": "delete, compact", "retention.ms": "-1", "retention.bytes": "-1"}
	if ps := DataTopic("d", ok, "b:9092"); len(ps) != 0 {
		t.Fatalf("problems on a good data topic: %+v", ps)
	}
	ps := DataTopic("d", map[string]string{"cleanup.policy": "delete", "retention.ms": "604800000", "retention.bytes": "-1"}, "b:9092")
	if len(ps) != 2 || ps[0].Setting != "cleanup.policy" || ps[1].Setting != "retention.ms" || !ps[0].Blocks || !ps[1].Blocks {
		t.Fatalf("problems %+v, want cleanup.policy and retention.ms, both blocking", ps)
	}
	if !strings.Contains(ps[0].Fix, "retention.ms=-1,retention.bytes=-1,cleanup.policy=[compact,delete]") {
		t.Fatalf("policy fix %q must set retention in the same change", ps[0].Fix)
	}
}

// TestMirrorTopicRulesOnlyWarn: a mirror's durability settings are the
// control topic's, never its partitions or policy, and never block.
func TestMirrorTopicRulesOnlyWarn(t *testing.T) {
	ps := MirrorTopic("m", map[string]string{"cleanup.policy": "delete", "min.compaction.lag.ms": "0", "delete.retention.ms": "1000"}, "b:9092")
	if len(ps) != 2 || ps[0].Setting != "min.compaction.lag.ms" || ps[1].Setting != "delete.retention.ms" {
		t.Fatalf("problems %+v, want min.compaction.lag.ms and delete.retention.ms", ps)
	}
	for _, p := range ps {
		if p.Blocks {
			t.Fatalf("%s blocks on a mirror", p.Setting)
		}
	}
}
