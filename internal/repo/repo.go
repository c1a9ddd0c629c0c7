// Package repo finds the kcleanup repository a test or a development tool
// runs in: kafkatest runs Kafka's tools from it, kcbench its scripts. It
// imports only the standard library, so a binary may use it.
package repo

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
)

// Root walks up from the working directory (a test runs in its package's
// folder) to the folder whose go.mod is kcleanup's (cmd/kcbench, a module of
// its own, is passed on the way up).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(mod, []byte("module github.com/kcleanup/kcleanup\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the kcleanup repository: no go.mod in the working directory or above it")
		}
		dir = parent
	}
}
