// Package deploy holds no code: the folder holds what an operator deploys, and its tests check
// that each file does what it says.
//
//	image/       the passwd and group of the image `make image` builds (FROM scratch, buildah)
//	kubernetes/  three worker replicas: kubectl apply -k deploy/kubernetes
//	systemd/     one worker replica per host
//	prometheus/  the alerting rules and their promtool unit tests
//
// TestImage builds the image with `make image` and runs the binary taken out of it.
// TestAlertRules runs promtool on the rules; TestAlertRulesUseExportedMetrics keeps their
// metric and label names to those worker/daemon/metrics.go exports, and
// TestAlertRulesUseAWorkersSeries to the series a worker's /metrics serves.
// TestDeployDocShowsTheFiles keeps docs/deploy.md's copies of these files equal to them. The
// deploy files' flags, variables, ports and paths are checked against the binary by
// cmd/kcleanup's TestDeployFilesMatchTheWorker, which has the command tree.
package deploy
