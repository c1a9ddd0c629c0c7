// Package console serves the operator console every worker serves at / on
// --http-addr. Its pages, and the audit report `kcleanup history --output
// html` writes, are built and rendered by package report/page (pure: the
// status document in, HTML out); this package serves them.
//
// Handler serves the console: GET / is the whole page, GET /console/main
// the content the page's script fetches every two seconds (with an ETag,
// so an unchanged page costs a 304) and swaps in without a reload, keeping
// the keyboard focus. Mount adds it to a daemon.Daemon. The page works
// without its script too (reload to update), loads nothing from elsewhere
// (its Content-Security-Policy forbids it), and reflows on small screens.
//
// This package sits between cmd and worker/daemon: it mounts on a daemon
// and never talks to Kafka.
package console
