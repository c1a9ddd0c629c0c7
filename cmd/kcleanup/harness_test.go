package main

import (
	"os"
	"testing"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

// TestMain ends the Docker broker of this test binary, if kafkatest.Bootstrap started one.
// Integration tests of every command share it; put shared test helpers in this file only when
// more than one command's tests need them.
// It also removes the kcleanup binary that tests running real processes built.
func TestMain(m *testing.M) {
	code := m.Run()
	removeOpBinary()
	kafkatest.Cleanup()
	os.Exit(code)
}
