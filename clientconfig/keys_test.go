package clientconfig

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestKeysAreKafkas: keys.go holds exactly the client configuration names of the Kafka release
// the development broker runs (read from its jars in .cache/ by testdata/KafkaClientKeys.java).
func TestKeysAreKafkas(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Java and the Kafka jars (skipped by -short)")
	}
	lib, err := filepath.Glob("../.cache/kafka/*/lib")
	if err != nil || len(lib) != 1 {
		t.Fatalf("want one Kafka release in .cache/kafka (make kafka-up downloads it), found %v", lib)
	}
	java := "java"
	if home := os.Getenv("JAVA_HOME"); home != "" {
		java = filepath.Join(home, "bin", "java") // as cmd/kafkadev/kafka.sh does
	}
	out, err := exec.Command(java, "-cp", filepath.Join(lib[0], "*"), "testdata/KafkaClientKeys.java").Output()
	if err != nil {
		t.Fatalf("java testdata/KafkaClientKeys.java: %v", err)
	}
	want := strings.Fields(string(out))
	var got []string
	for k := range kafkaClientKeys {
		got = append(got, k)
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("keys.go differs from Kafka %s's client configuration:\nkeys.go: %v\nKafka:   %v", filepath.Base(filepath.Dir(lib[0])), got, want)
	}
}
