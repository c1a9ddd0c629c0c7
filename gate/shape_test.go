package gate

import "testing"

// The shape rule says what is no control topic and why, in the words every command uses.
func TestShape(t *testing.T) {
	compact := map[string]string{"cleanup.policy": "compact"}
	for _, tc := range []struct {
		s    Shape
		want string
	}{
		{ShapeOf("ctl", 1, compact), ""},
		{Shape{Topic: "ctl", Partitions: 1, Policy: "compact", Kcleanup: 3, Other: 2}, ""}, // rejected records in a control topic
		{Shape{Topic: "ctl", Partitions: 1, Policy: "compact", FlinkAgents: 1, Other: 9}, ""},
		{ShapeOf("nc-as", 3, map[string]string{"cleanup.policy": "compact,delete"}), "nc-as has 3 partitions and cleanup.policy=compact,delete"},
		{ShapeOf("t", 1, map[string]string{"cleanup.policy": "delete,compact"}), "t has cleanup.policy=delete,compact"},
		{ShapeOf("t", 1, nil), "t has cleanup.policy=delete (Kafka's default)"},
		{Shape{Topic: "t", Partitions: 1, Policy: "compact", Other: 5}, "t has 5 record(s), none in kcleanup's or Flink Agents' control format"},
	} {
		if got := tc.s.Misfit(); got != tc.want {
			t.Errorf("%+v: Misfit %q, want %q", tc.s, got, tc.want)
		}
	}
	s := ShapeOf("nc-as", 3, map[string]string{"cleanup.policy": "compact,delete"})
	if got, want := s.NotControlTopic([]string{"nc-as.kcleanup"}),
		"nc-as has 3 partitions and cleanup.policy=compact,delete: it is not a control topic (one partition, cleanup.policy=compact), it looks like a data topic; its control topic is nc-as.kcleanup"; got != want {
		t.Errorf("NotControlTopic:\n got %q\nwant %q", got, want)
	}
	if got := ShapeOf("ctl", 1, compact).NotControlTopic(nil); got != "" {
		t.Errorf("a control topic: %q", got)
	}
}
