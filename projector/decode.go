package projector

import (
	"strconv"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
)

// decodeReason classifies an events.Decode error into a rejection reason.
func decodeReason(err error) Reason {
	switch {
	case errors.Is(err, events.ErrNewerSchema):
		return ReasonNewerSchema
	case errors.Is(err, events.ErrUnknownEvent):
		return ReasonUnknownEvent
	case errors.Is(err, events.ErrTombstone):
		return ReasonTombstone
	case errors.Is(err, events.ErrKeyMismatch):
		// The key names another plan or event than the body.
		return ReasonBadKey
	case errors.Is(err, events.ErrPlanEdited):
		// events reports an edited plan as malformed; tampering deserves
		// its own name.
		return ReasonTampered
	}
	var de *events.DecodeError
	if errors.As(err, &de) && de.Field == "key" {
		return ReasonBadKey // the key does not parse as <planId>/<EVENT>
	}
	return ReasonMalformed
}

// formatOffsets writes offsets as "0:150,1:230" in partition order, the same
// syntax the transcripts use; "none" when empty. Only the digest and the
// transcripts use it (changing it would change every digest); messages people
// read use events.Offsets.String.
func formatOffsets(o events.Offsets) string {
	if len(o) == 0 {
		return "none"
	}
	var b []byte
	for i, p := range o.Partitions() {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, o[p], 10)
	}
	return string(b)
}
