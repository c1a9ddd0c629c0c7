package main

import (
	"fmt"
	"unicode/utf8"
)

// A control record's key and a verdict's detail are whatever a writer chose, up to a megabyte.
// Views clip them and say how long they were; --full shows them whole.
const (
	tableKeyLimit    = 80   // bytes of a key in a table row
	tableDetailLimit = 300  // bytes of a detail in a table row
	jsonTextLimit    = 1024 // bytes of a key or a detail in a JSON document
	flagFull         = "full"
)

// clip returns s when it has at most limit bytes; otherwise its first limit bytes (cut at a
// character boundary) followed by "… (N bytes)", N the length of s.
func clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

// clipJSON is clip for a JSON field: the clipped text, and the full length when it was clipped
// (0 otherwise), for a companion "…Bytes" field. full turns clipping off.
func clipJSON(s string, full bool) (string, int) {
	if full || len(s) <= jsonTextLimit {
		return s, 0
	}
	return clip(s, jsonTextLimit), len(s)
}
