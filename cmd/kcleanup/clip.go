package main

import (
	"fmt"
	"strings"

	"github.com/kcleanup/kcleanup/report"
)

// A control record's key and a verdict's detail are whatever a writer chose, up to a megabyte.
// Views clip them and say how long they were; --all shows them whole.
const (
	tableKeyLimit    = 80               // bytes of a key in a table row
	tableDetailLimit = 300              // bytes of a detail in a table row
	jsonTextLimit    = report.TextLimit // bytes of a key or a detail in a JSON document
	flagAll          = "all"            // status and history: everything, whole
)

// clip is report.Clip: the one way views cut text.
func clip(s string, limit int) string { return report.Clip(s, limit) }

// clipCut is clip for text a document may already have cut (its length then in n, the
// document's "…Bytes" field): the length it says is always that of the whole text.
func clipCut(s string, n, limit int) string {
	if n == 0 {
		return clip(s, limit)
	}
	if limit > len(s) {
		limit = len(s)
	}
	short := clip(s, limit)
	if i := strings.LastIndex(short, "… ("); i >= 0 {
		short = short[:i]
	}
	return fmt.Sprintf("%s… (%d bytes)", short, n)
}

// clipJSON is clip for a JSON field: the clipped text, and the full length when it was clipped
// (0 otherwise), for a companion "…Bytes" field. full (--all) turns clipping off.
func clipJSON(s string, full bool) (string, int) {
	if full || len(s) <= jsonTextLimit {
		return s, 0
	}
	return clip(s, jsonTextLimit), len(s)
}
