// Package fsm is the lifecycle of one cleanup operation (docs/design.md §4–§5):
//
//	NONE --PLANNED--> PLANNED --COMMITTED--> COMMITTED --DELETING--> DELETING --APPLIED--> APPLIED
//	                                                                 DELETING --DELETING--> DELETING (retry)
//
// The table is data (Transitions) and is written in one place; Next, the
// state diagram in docs/state-diagram.md (Mermaid, `make docs`) and the
// tests are all derived from it. github.com/looplab/fsm is the authority for
// the table: Next answers from a lookup map built once, and a test checks that
// map against looplab for every (state, event) pair, so the two cannot drift.
//
// Contract:
//
//   - Next(from, e) is pure. It returns the state e leads to, or an error
//     matching ErrInvalidTransition that names the state, the event and the
//     events allowed there. It never panics, whatever the input.
//   - fsm holds no per-operation memory. The projector owns the state of every
//     operation and asks Next once per control record; the answer depends only
//     on the arguments, so every replica folding the same log agrees (I4).
//   - DELETING may repeat. A worker appends DELETING before DeleteRecords and
//     may crash after it; the next worker appends DELETING again and retries.
//     DeleteRecords at or below the log start is a no-op, so a repeat is safe
//     and must not be rejected (docs/design.md §6).
//   - APPLIED is terminal. It records the verified log-start offsets; nothing
//     may follow it, because the records below the boundary are gone and
//     there is nothing left to do or undo. Any event after it is invalid.
//   - Only the lifecycle lives here. Whether a record's content is acceptable
//     (plan ID, monotonic boundary, log-start offsets, duplicates) is the
//     projector's decision.
//
// fsm imports only events, looplab/fsm, cockroachdb/errors and the standard
// library: no Kafka, no clock, no I/O.
package fsm
