package main

import (
	"github.com/cockroachdb/errors"
	"github.com/spf13/pflag"

	"github.com/kcleanup/kcleanup/worker"
)

// tombstoneOptions are the flags of the tombstone check (docs/operator-guide.md, "Migrating
// from tombstones"): plan, apply, submit and doctor bound the scan; apply and submit may allow
// what it found.
type tombstoneOptions struct {
	scanLimit int64
	allow     bool
}

func (o *tombstoneOptions) addFlags(f *pflag.FlagSet, allow bool) {
	f.Int64Var(&o.scanLimit, "tombstone-scan-limit", worker.DefaultTombstoneScanLimit,
		"read at most this many `records` of the data topic for tombstones (0: no limit); a scan it stops cannot tell, which refuses a first plan")
	if allow {
		f.BoolVar(&o.allow, "allow-tombstones", false,
			"commit a control topic's first plan although tombstones lie at or above its offsets (or the scan cannot tell): you assert they name keys no supported recovery point replays; PLANNED and COMMITTED record it in their actor")
	}
}

// check is the usage error of a bad limit.
func (o tombstoneOptions) check() error {
	if o.scanLimit < 0 {
		return usageError(errors.Newf("invalid --tombstone-scan-limit %d: want a number of records, or 0 for no limit", o.scanLimit))
	}
	return nil
}

// apply sets the options of a worker call.
func (o tombstoneOptions) apply(w worker.Options) worker.Options {
	w.TombstoneScanLimit, w.AllowTombstones = o.scanLimit, o.allow
	return w
}
