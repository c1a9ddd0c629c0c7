package gate

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
	if ps := Settings("c", 1, created(), "b:9092"); len(ps) != 0 {
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
			ps := Settings("c", tc.partitions, cfg, "b:9092")
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
	for _, p := range Blocking(Settings("c", 1, kafkaDefaults, "b:9092")) {
		blocking = append(blocking, p.Setting)
	}
	if strings.Join(blocking, ",") != "min.compaction.lag.ms" {
		t.Fatalf("blocking settings %v, want min.compaction.lag.ms only", blocking)
	}
}

func TestEveryReasonHasAClass(t *testing.T) {
	seen := map[Reason]bool{}
	for _, r := range Reasons() {
		if seen[r] {
			t.Fatalf("reason %q listed twice", r)
		}
		seen[r] = true
		if c := r.Class(); c != Refused && c != CannotTell && c != Invalid {
			t.Fatalf("reason %q has class %q", r, c)
		}
	}
	if Reason("from-a-newer-build").Class() != CannotTell {
		t.Fatal("an unknown reason must fail closed")
	}
	for c, want := range map[Class][2]int{Allowed: {0, 200}, "": {4, 503}, Refused: {3, 409}, CannotTell: {4, 503}, Invalid: {2, 400}} {
		if c.ExitCode() != want[0] || c.HTTPStatus() != want[1] {
			t.Fatalf("class %q: exit %d http %d", c, c.ExitCode(), c.HTTPStatus())
		}
	}
}
