package worker_test

import (
	"testing"

	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

// TestMain ends the Docker broker of the real-broker tests, if one was started.
func TestMain(m *testing.M) { kafkatest.Main(m) }
