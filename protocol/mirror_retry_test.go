package protocol

import (
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/errors"
)

// mirrorWriteFailed is the transcript command for MirrorWriteRetry:
// `mirror-write-failed code=N [blocked] [unauthorized]` says what the
// mirror writer does after an attempt failed so.
func mirrorWriteFailed(t *testing.T, d *datadriven.TestData) string {
	var code int
	if d.HasArg("code") {
		d.ScanArgs(t, "code", &code)
	}
	err := errors.Newf("attempt failed with Kafka error code %d", code)
	if d.HasArg("blocked") {
		err = errors.Mark(err, ErrBlocked)
	}
	if d.HasArg("unauthorized") {
		err = errors.Mark(err, ErrUnauthorized)
	}
	if MirrorWriteRetry(err, int16(code)) {
		return "retry from the fence\n"
	}
	return "stop: the step reports the error\n"
}

func TestMirrorWriteRetryNothingFailed(t *testing.T) {
	if MirrorWriteRetry(nil, 0) {
		t.Fatal("an attempt that did not fail is retried")
	}
}
