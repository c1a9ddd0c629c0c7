package main

import (
	"encoding/json"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/protocol"
)

// findingsSchemaVersion is the version of the documents of init and doctor
// (docs/schema/findings.schema.json). Version 2: a finding's hints are a list, "hints", as in
// every kcleanup document (version 1 had one string, "hint").
const findingsSchemaVersion = 2

// findingList is the findings of a check, as init and doctor print them in JSON.
type findingList []protocol.Finding

// findingDoc is one finding in JSON.
type findingDoc struct {
	Severity protocol.Severity `json:"severity"`
	Subject  string            `json:"subject"`
	Message  string            `json:"message"`
	Hints    []string          `json:"hints"`
}

func (l findingList) MarshalJSON() ([]byte, error) {
	docs := make([]findingDoc, 0, len(l))
	for _, f := range l {
		d := findingDoc{Severity: f.Severity, Subject: f.Subject, Message: f.Message, Hints: []string{}}
		if f.Hint != "" {
			d.Hints = append(d.Hints, f.Hint)
		}
		docs = append(docs, d)
	}
	return json.Marshal(docs)
}

// UnmarshalJSON reads what MarshalJSON writes (tests read the documents back with it).
func (l *findingList) UnmarshalJSON(data []byte) error {
	var docs []findingDoc
	if err := json.Unmarshal(data, &docs); err != nil {
		return errors.Wrap(err, "findings")
	}
	*l = (*l)[:0]
	for _, d := range docs {
		*l = append(*l, protocol.Finding{Severity: d.Severity, Subject: d.Subject, Message: d.Message, Hint: strings.Join(d.Hints, "\n")})
	}
	return nil
}
