package kafkatest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/internal/repo"
)

// RunTool runs one of Kafka's own command-line tools (cmd/kafkadev/kafka.sh cli TOOL ARGS...)
// against the test broker and returns its standard output. Tests use it to cross-check what
// they see through franz-go with what Kafka's tools report. The test fails if the tool exits
// non-zero. It needs Java 17 and Maven even when the broker runs in Docker.
func RunTool(t testing.TB, tool string, args ...string) string {
	t.Helper()
	addr := Bootstrap(t)
	root, err := repo.Root()
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // may download the jars first
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "cmd", "kafkadev", "kafka.sh"), append([]string{"cli", tool}, args...)...)
	cmd.Env = append(os.Environ(), EnvBootstrap+"="+addr) // the tool's --bootstrap-server
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafkatest: %s %s: %v\nstdout:\n%s\nstderr:\n%s", tool, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
