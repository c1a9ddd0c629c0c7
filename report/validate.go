package report

import (
	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/gate"
)

// Unjudged is the answer to a request the gate did not judge (bad request,
// unknown control topic, a worker shutting down): the verdict document with
// allowed false and the reason's class, so a client that reads only that
// field fails closed. err's hints become the verdict's.
func Unjudged(topic string, reason gate.Reason, err error) gate.Verdict {
	r := gate.Refusal{Reason: reason, Class: reason.Class(), Message: err.Error(), Hints: errors.GetAllHints(err)}
	if r.Hints == nil {
		r.Hints = []string{}
	}
	return gate.Verdict{SchemaVersion: gate.SchemaVersion, Class: r.Class, ControlTopic: topic,
		Reason: r.Reason, Message: r.Message, Hints: r.Hints, Refusals: []gate.Refusal{r}, Notes: []string{}, Checked: []gate.Checked{}}
}
