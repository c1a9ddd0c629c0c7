package worker

import (
	"context"
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/checkpoint"
	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/events"
)

// A recovery point given as a Flink checkpoint or savepoint (kcleanup plan, validate, pin and
// markers --checkpoint; POST /v1/validate with "checkpoint"): read natively by package
// checkpoint through checkpoint/store.

// CheckpointRead is what --checkpoint found: where, what, and the selected operator's markers.
type CheckpointRead struct {
	Path       string // as given: the default recovery point
	Location   store.Location
	Checkpoint *checkpoint.Checkpoint
	Subtasks   []checkpoint.SubtaskMarker
}

// ReadCheckpoint opens PATH on its store and reads the markers of the selected operator (or of
// the one operator holding recoveryMarker). Every error says which file and what to do.
func ReadCheckpoint(ctx context.Context, path string, sel checkpoint.Selector, opts store.Options) (CheckpointRead, error) {
	st, loc, err := store.Open(ctx, path, opts)
	if err != nil {
		err = errors.Wrapf(err, "open checkpoint %s", path)
		if len(errors.GetAllHints(err)) == 0 {
			err = errors.WithHint(err, "give the directory of a completed checkpoint (chk-N, holding _metadata) or savepoint, or its _metadata file: local, file:// or s3://")
		}
		return CheckpointRead{}, err
	}
	cp, err := checkpoint.Read(ctx, st, sel)
	if err != nil {
		return CheckpointRead{}, errors.Wrapf(err, "read checkpoint %s", loc.Metadata)
	}
	subs, err := cp.Markers()
	if err != nil {
		return CheckpointRead{}, errors.Wrapf(err, "checkpoint %s", loc.Metadata)
	}
	return CheckpointRead{Path: path, Location: loc, Checkpoint: cp, Subtasks: subs}, nil
}

// Markers are the selected operator's markers as `kcleanup markers` writes them: each says which checkpoint,
// operator and subtask it is from, so that events.CheckSubtasks holds them to every subtask of
// one checkpoint, exactly as a markers file of them is held.
func (r CheckpointRead) Markers() []events.Marker {
	op := r.Checkpoint.Selected
	out := make([]events.Marker, 0, len(r.Subtasks))
	for _, s := range r.Subtasks {
		m := s.Marker
		m.Source = &events.MarkerSource{CheckpointID: r.Checkpoint.ID, OperatorUID: op.UID, OperatorUIDHash: op.UIDHash,
			Parallelism: int32(op.Parallelism), Subtask: int32(s.Subtask)}
		out = append(out, m)
	}
	return out
}

// Origins name each marker for messages: "PATH subtask N".
func (r CheckpointRead) Origins() []string {
	out := make([]string, len(r.Subtasks))
	for i, s := range r.Subtasks {
		out[i] = fmt.Sprintf("%s subtask %d", r.Path, s.Subtask)
	}
	return out
}

// Complete holds the markers to every subtask of the checkpoint, as markers files are held.
func (r CheckpointRead) Complete() error {
	ms := r.Markers()
	if _, err := events.CheckSubtasks(ms); err != nil {
		return errors.WithHintf(errors.Wrapf(err, "checkpoint %s", r.Location.Metadata),
			"every subtask of the operator must hold one marker; a checkpoint where some do not cannot be planned from safely")
	}
	return nil
}
