// Package console renders what kcleanup knows as pictures: the operator
// console every worker serves at / on --http-addr, and the audit report
// `kcleanup history --output html` writes. One set of templates
// (assets/page.html, with its stylesheet and script, embedded) renders both,
// so the page, the report and the terminal read the same: offsets as
// events.Offsets.String() writes them, reasons as projector.Reason words,
// details and hints in the CLI's sentences.
//
// Two pure builders make a View, and Render writes it:
//
//   - FromWorker(status, now): the console of one replica, from its
//     /v1/status document (report.WorkerStatus) and nothing else, so the
//     page shows no more than /v1/status does. now only tells a stuck
//     operation (COMMITTED or DELETING for longer than StuckAfter) from a
//     pending one.
//   - FromLog(status, audit): the report of one control topic, from a
//     replay (report.StatusOf and projector.State.Audit). No clock and no
//     live offset enters it: the same log renders the same bytes. Its first
//     part (what the log decided: binding, degraded, boundary, operations
//     and their timeline) is the same for the log after compaction (I5): a
//     step shows the time and actor of the latest record under its key, the
//     copy compaction keeps. Its second part lists the records as read.
//
// Handler serves the console: GET / is the whole page, GET /console/main
// the content the page's script fetches every two seconds (with an ETag,
// so an unchanged page costs a 304) and swaps in without a reload, keeping
// the keyboard focus. Mount adds it to a daemon.Daemon. The page works
// without its script too (reload to update), loads nothing from elsewhere
// (its Content-Security-Policy forbids it), and reflows on small screens.
//
// This package sits between cmd and worker: it imports worker for the
// status document and never talks to Kafka.
package console
