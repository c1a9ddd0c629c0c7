package protocol

import "github.com/kcleanup/kcleanup/projector"

// Governors is the fact every writer of a control topic gathers once, in
// one listing of the cluster's topics (worker.Cluster.Governors), before
// it writes about the data-topic incarnation (Topic, TopicID): the other
// control topics, under any name, bound to it. Topic "" when the control
// topic written to names no incarnation yet (an unbound one, for the
// writers that write no plan): nothing to check.
type Governors struct {
	Topic, TopicID string
	Others         []string
}

// GovernedElsewhere is the one-governor rule (Governance.Check; issue 35)
// for a write to control topic self, which exists and was read (st): nil
// when the write may go on, else why not, marked ErrRejected and
// ErrGovernedElsewhere. A run whose Config carries Governors decides it
// before its first step (apply, submit, preflight, pin, adopt); the writers
// that are no run (unpin, mirror attach, a tombstones declaration) ask it
// in package worker with the same fact.
func GovernedElsewhere(st *projector.State, self string, g Governors, bootstrap string) error {
	if g.Topic == "" {
		return nil
	}
	_, _, bound := st.Binding()
	return Governance{Self: self, Exists: true, Bound: bound, Topic: g.Topic, TopicID: g.TopicID, Others: g.Others}.Check(bootstrap)
}
