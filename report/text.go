package report

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// TextLimit is how many bytes of text a record's writer chose (a key, a verdict's detail) the
// default view of a document shows; the complete view shows it whole.
const TextLimit = 1024

// Clip returns s when it has at most limit bytes; otherwise its first limit bytes (cut at a
// character boundary) followed by "… (N bytes)", N the length of s. Every view that cuts text
// cuts it so.
func Clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

// clipField is Clip at TextLimit for a document field, with the full length when it cut (0
// otherwise) for the field's "…Bytes" companion. whole turns it off (the complete view).
func clipField(s string, whole bool) (string, int) {
	if whole || len(s) <= TextLimit {
		return s, 0
	}
	return Clip(s, TextLimit), len(s)
}

// FormatTime prints a time as every view does: UTC to the second, "-" when unknown.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// SingleLine keeps a table row on one line: a record's detail may quote anything.
func SingleLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// OrDash is s, or "-" for an empty cell.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// NoReason is what every view says of a PLANNED or COMMITTED whose writer gave no reason
// (apply and submit without --reason, any earlier kcleanup, a foreign producer).
const NoReason = "(no reason given)"

// WhyText is how every view words the operator's reason of a PLANNED or COMMITTED: "why: R",
// or "why: (no reason given)".
func WhyText(reason string) string {
	if reason == "" {
		return "why: " + NoReason
	}
	return "why: " + reason
}
