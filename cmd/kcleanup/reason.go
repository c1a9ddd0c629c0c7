package main

import (
	"strings"
	"unicode"

	"github.com/cockroachdb/errors"
	"github.com/spf13/pflag"

	"github.com/kcleanup/kcleanup/events"
)

// reasonOption is the --reason of apply and submit: why the operator writes the plan, recorded
// in its PLANNED and COMMITTED (docs/events.md, "Reasons"). Optional: a script that applied
// yesterday must not fail at 3 a.m. for want of it, and without it the records stay schema 1,
// which every earlier kcleanup reads; history then says "(no reason given)".
type reasonOption struct {
	text string
	set  bool
}

func (o *reasonOption) addFlag(f *pflag.FlagSet, what string) {
	f.StringVar(&o.text, "reason", "", "why, for the audit: "+what+" record it and history, status and the report show it (at most 1024 bytes; optional, but earlier kcleanup builds must be upgraded first: docs/events.md)")
}

// check refuses, before anything connects, a --reason the log would refuse: blank, control
// characters, over events.MaxReasonBytes.
func (o *reasonOption) check(f *pflag.FlagSet) error {
	o.set = f.Changed("reason")
	if !o.set {
		return nil
	}
	s := o.text
	switch {
	case strings.TrimSpace(s) == "":
		return usageError(errors.WithHint(errors.New("--reason is blank"),
			"say why in a few words (history shows it), or leave --reason out: history then says \"(no reason given)\""))
	case len(s) > events.MaxReasonBytes:
		return usageError(errors.WithHintf(errors.Newf("--reason is %d bytes: at most %d are recorded", len(s), events.MaxReasonBytes),
			"shorten it; put the detail in a ticket and name the ticket in the reason"))
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return usageError(errors.WithHint(errors.New("--reason contains a control character (a newline or tab, say)"),
			"give it on one line of printable text"))
	}
	return usageError(events.CheckReason(s)) // anything else the log would refuse (invalid UTF-8)
}
