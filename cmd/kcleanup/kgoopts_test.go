package main

import (
	"crypto/tls"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

func newClient(t *testing.T, g globalOptions) *kgo.Client {
	t.Helper()
	opts, err := g.kgoOpts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestKgoOptsDefaults(t *testing.T) {
	cl := newClient(t, globalOptions{bootstrapServers: []string{"h1:9092", "h2:9093"}, timeout: 7 * time.Second})
	if got := cl.OptValue(kgo.SeedBrokers).([]string); strings.Join(got, ",") != "h1:9092,h2:9093" {
		t.Errorf("seed brokers %v", got)
	}
	if got := cl.OptValue(kgo.DialTimeout); got != 7*time.Second {
		t.Errorf("dial timeout %v", got)
	}
	if got := cl.OptValue(kgo.RequiredAcks); got != kgo.AllISRAcks() {
		t.Errorf("acks %v", got)
	}
	if got := cl.OptValue(kgo.DisableIdempotentWrite); got != false {
		t.Errorf("idempotent writes disabled: %v", got)
	}
	if got := cl.OptValue(kgo.ClientID); got != defaultClientID {
		t.Errorf("client id %v", got)
	}
	if got := cl.OptValue(kgo.DialTLSConfig).(*tls.Config); got != nil {
		t.Errorf("TLS without a command config")
	}
	if got := cl.OptValue(kgo.SASL).([]sasl.Mechanism); len(got) != 0 {
		t.Errorf("SASL without a command config")
	}
}

// TestKgoOptsCommandConfig: the file's client.id wins over kcleanup's default, acks stay all,
// and the notes for ignored keys are printed once however many clients the command opens.
func TestKgoOptsCommandConfig(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "client.properties", "client.id=my-app\nrequest.timeout.ms=1000\nacks=1\n")
	var stderr strings.Builder
	g := globalOptions{bootstrapServers: []string{"h:9092"}, timeout: time.Second, commandConfig: cfg, stderr: &stderr, notesOnce: new(sync.Once)}
	cl := newClient(t, g)
	newClient(t, g)
	if got := cl.OptValue(kgo.ClientID); got != "my-app" {
		t.Errorf("client.id from the file must win: %v", got)
	}
	if got := cl.OptValue(kgo.RequiredAcks); got != kgo.AllISRAcks() {
		t.Errorf("acks %v", got)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "Note: "+cfg+":2: request.timeout.ms is ignored: kcleanup bounds every request with --timeout") ||
		!strings.Contains(lines[1], ":3: acks is ignored: kcleanup always writes with acks=all") {
		t.Errorf("notes:\n%s", stderr.String())
	}
}
