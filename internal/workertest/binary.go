package workertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// EnvBinary names a prebuilt kcleanup binary for Binary to return instead of building one.
const EnvBinary = "KCLEANUP_TEST_BINARY"

// built is the kcleanup executable of this test process, built on first use.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

// Binary returns the kcleanup executable that process tests run: built once per test process
// from this tree (go build), or the one KCLEANUP_TEST_BINARY names. TestMain calls RemoveBinary
// after the tests.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvBinary); p != "" {
		return p
	}
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "kcleanup-bin-")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "kcleanup")
		out, err := exec.Command("go", "build", "-o", built.path, "github.com/kcleanup/kcleanup/cmd/kcleanup").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// RemoveBinary deletes the executable Binary built, if it built one.
func RemoveBinary() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}
