package main

import (
	"context"
	"io"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/spf13/pflag"

	"github.com/kcleanup/kcleanup/checkpoint"
	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/worker"
)

// pointFlags are the two ways plan, validate, pin and markers are given a recovery point: its
// markers files (--markers), or the checkpoint or savepoint itself (--checkpoint), read natively
// (package checkpoint) with the operator named as Flink Agents' tool names it.
type pointFlags struct {
	markers         []string // files; "-" is standard input
	checkpoint      string   // PATH as given: chk-N, a savepoint directory or its _metadata
	operatorUID     string
	operatorUIDHash string
}

const (
	flagCheckpoint      = "checkpoint"
	flagOperatorUID     = "operator-uid"
	flagOperatorUIDHash = "operator-uid-hash"
)

// add declares --markers (unless withMarkers is false), --checkpoint and the operator flags.
func (p *pointFlags) add(f *pflag.FlagSet, withMarkers bool) {
	if withMarkers {
		f.StringArrayVar(&p.markers, "markers", nil, "markers `file` (repeatable; - for standard input); or --checkpoint")
	}
	f.StringVar(&p.checkpoint, flagCheckpoint, "",
		"the checkpoint or savepoint: a chk-N or savepoint `path`, or its _metadata; local, file:// or s3:// (read natively, no JVM)")
	f.StringVar(&p.operatorUID, flagOperatorUID, "",
		"with --checkpoint: the `uid` of the operator holding the markers (default: the one operator holding the state recoveryMarker)")
	f.StringVar(&p.operatorUIDHash, flagOperatorUIDHash, "",
		"with --checkpoint: that operator's uid `hash` (Flink's operator ID, 32 hex digits), instead of --operator-uid")
}

// check is the usage rule: markers or a checkpoint, not both and not neither; operator flags
// only with a checkpoint, and one of them.
func (p pointFlags) check(withMarkers bool, command string) error {
	if err := p.checkFlags(withMarkers); err != nil {
		return usageError(errors.WithHintf(err, "run 'kcleanup %s --help' for usage", command))
	}
	return nil
}

func (p pointFlags) checkFlags(withMarkers bool) error {
	switch {
	case withMarkers && len(p.markers) > 0 && p.checkpoint != "":
		return usageError(errors.WithHint(errors.New("--markers and --checkpoint both name the recovery point"),
			"give one: --checkpoint PATH reads the markers from the checkpoint itself"))
	case withMarkers && len(p.markers) == 0 && p.checkpoint == "":
		return usageError(errors.WithHint(errors.New("no recovery point: give --checkpoint PATH or --markers FILE"),
			"--checkpoint takes the checkpoint (chk-N) or savepoint directory the job would restore from, local or s3://"))
	case !withMarkers && p.checkpoint == "":
		return usageError(errors.WithHint(errors.New("--checkpoint is required"),
			"give the checkpoint (chk-N) or savepoint directory, or its _metadata file, local or s3://"))
	case p.checkpoint == "" && (p.operatorUID != "" || p.operatorUIDHash != ""):
		return errors.New("--operator-uid and --operator-uid-hash go with --checkpoint")
	case p.operatorUID != "" && p.operatorUIDHash != "":
		return errors.WithHint(errors.New("--operator-uid and --operator-uid-hash both name the operator"), "give one")
	case p.checkpoint != "" && strings.TrimSpace(p.checkpoint) == "":
		return errors.New("--checkpoint is blank")
	}
	return nil
}

func (p pointFlags) selector() checkpoint.Selector {
	return checkpoint.Selector{OperatorUID: p.operatorUID, OperatorUIDHash: p.operatorUIDHash}
}

// readPoint reads the recovery point's markers from --markers files or from --checkpoint.
// rp is the recovery point's name: --recovery-point when given, else, for a checkpoint, PATH
// exactly as given (as Flink Agents' tool does, so that both tools give one plan ID for one
// invocation). cp is nil for markers files.
func (p pointFlags) readPoint(ctx context.Context, recoveryPoint string, stdin io.Reader, warn io.Writer) (markers []events.Marker, origins []string, rp string, cp *worker.CheckpointRead, err error) {
	if p.checkpoint == "" {
		markers, origins, err = readMarkerFiles(p.markers, stdin, warn)
		return markers, origins, recoveryPoint, nil, err
	}
	r, err := worker.ReadCheckpoint(ctx, p.checkpoint, p.selector(), store.Options{})
	if err != nil {
		return nil, nil, "", nil, err
	}
	if err := r.Complete(); err != nil {
		return nil, nil, "", nil, err
	}
	if recoveryPoint == "" {
		recoveryPoint = p.checkpoint
	}
	return r.Markers(), r.Origins(), recoveryPoint, &r, nil
}
