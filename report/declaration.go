package report

import (
	"fmt"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/projector"
)

// DeclarationStatus is the operator's no-tombstones declaration as the log
// decided it (issue 35 item 8): while InForce, the tombstone rule does not
// read the partitions it covers from Since on.
type DeclarationStatus struct {
	InForce bool           `json:"inForce"`
	Topic   string         `json:"topic"`
	TopicID string         `json:"topicId"`
	Since   events.Offsets `json:"since"`
	// Offset, At, Actor and Reason are those of the NO_TOMBSTONES_DECLARED.
	Offset int64     `json:"offset"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Reason string    `json:"reason"`
	// Withdrawn is what ended it: a NO_TOMBSTONES_WITHDRAWN, or a record
	// over its key that is not a declaration (no actor then).
	Withdrawn *PinEnd `json:"withdrawn,omitempty"`
}

// DeclarationStatusOf is the declaration's document; nil for none (the
// zero Declaration).
func DeclarationStatusOf(d projector.Declaration) *DeclarationStatus {
	if d.Since == nil {
		return nil
	}
	ds := &DeclarationStatus{InForce: d.InForce(), Topic: d.Topic, TopicID: d.TopicID, Since: d.Since,
		Offset: d.Offset, At: d.At, Actor: d.Actor, Reason: d.Reason}
	if w := d.Withdrawn; w != nil {
		ds.Withdrawn = &PinEnd{Offset: w.Offset, At: w.At, Actor: w.Actor, Reason: w.Reason}
	}
	return ds
}

// DeclarationOf is the projection's latest declaration (nil for none).
func DeclarationOf(s *projector.State) *DeclarationStatus {
	d, ok := s.Declaration()
	if !ok {
		return nil
	}
	return DeclarationStatusOf(d)
}

// DeclarationLines are the label/value lines of a declaration for the
// tables of status and tombstones declare-none.
func DeclarationLines(d *DeclarationStatus) [][2]string {
	state := "in force: the tombstone rule does not read the partitions it covers"
	if w := d.Withdrawn; w != nil {
		by := w.Actor
		if by == "" {
			by = "no writer"
		}
		state = fmt.Sprintf("withdrawn at offset %d by %s: %s (the tombstone rule reads the data topic)", w.Offset, by, SingleLine(w.Reason))
	}
	return [][2]string{
		{"no-tombstones declaration", state},
		{"  since", d.Since.String()},
		{"  declared", fmt.Sprintf("at offset %d by %s, %s", d.Offset, d.Actor, d.At.UTC().Format(time.RFC3339))},
		{"  reason", SingleLine(d.Reason)},
	}
}
