// Package page builds and renders the pages of kcleanup's pictures: the
// operator console every worker serves (worker/console) and the audit report
// `kcleanup history --output html` writes. One set of templates
// (assets/page.html, with its stylesheet and script, embedded) renders both,
// so the page, the report and the terminal read the same: offsets as
// events.Offsets.String() writes them, reasons as projector.Reason words,
// details and hints in the CLI's sentences. Pure, as package report is
// (TestReportIsPure): no Kafka client, no clock, no os.
//
// Two pure builders make a View, and Render (or HTML) writes it:
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
package page
