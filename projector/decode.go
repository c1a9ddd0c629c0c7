package projector

import (
	"strconv"
	"sync"

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

// DecodeAll decodes records on up to workers goroutines and returns them in
// their order, for StepDecoded. Decoding is pure and most of a replay's cost;
// the fold that follows stays on one goroutine, in offset order. The caller
// picks workers (below 2: decode on the calling goroutine). A reader that
// decodes batch after batch keeps Decoders instead.
func DecodeAll(recs []Record, workers int) []Decoded {
	return NewDecoders(max(workers, 1)).DecodeAll(recs)
}

// Decoders decodes batches on one goroutine per events.Decoder, each kept
// from batch to batch so that it checks each distinct plan once.
type Decoders []*events.Decoder

// NewDecoders returns n decoders (at least one).
func NewDecoders(n int) Decoders {
	ds := make(Decoders, max(n, 1))
	for i := range ds {
		ds[i] = events.NewDecoder()
	}
	return ds
}

// DecodeAll decodes recs, keeping their order. Each goroutine decodes a
// contiguous chunk: the records of one operation are usually close together,
// so the goroutine that decodes them meets its plan again.
func (ds Decoders) DecodeAll(recs []Record) []Decoded {
	out := make([]Decoded, len(recs))
	if len(ds) < 2 || len(recs) < 2 {
		for i, r := range recs {
			out[i] = DecodeWith(ds[0], r)
		}
		return out
	}
	chunk := (len(recs) + len(ds) - 1) / len(ds)
	var wg sync.WaitGroup
	for w, lo := 0, 0; lo < len(recs); w, lo = w+1, lo+chunk {
		hi := min(lo+chunk, len(recs))
		d := ds[w]
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				out[i] = DecodeWith(d, recs[i])
			}
		})
	}
	wg.Wait()
	return out
}
