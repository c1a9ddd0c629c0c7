package architecture

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/internal/repo"
)

const module = "github.com/kcleanup/kcleanup"

// layer ranks every package of the module: a package may import only packages of a lower
// rank. The product's stack reads
//
//	cmd → worker/console → worker/daemon → worker → report → {gate, protocol} → projector/invariant → projector → fsm → events
//
// with topicconfig (the topics' settings rules, no package of ours) below gate and protocol
//
// (report renders what gate and protocol decide; gate and protocol never import each other).
// The test kits under internal/ rank beside the layer they drive, and no product package
// imports them (TestProductImportsNoTestKit).
var layer = map[string]int{
	"events":                           0,
	"internal/repo":                    0, // finds the repository; the standard library only
	"fsm":                              1,
	"checkpoint":                       1, // the pure Flink checkpoint reader: no Kafka, no I/O of its own
	"topicconfig":                      1, // the settings rules of the data, control and mirror topics: std only
	"projector/flinkagents":            1,
	"projector":                        2,
	"projector/invariant":              3, // pure checks of §8, over the projector
	"gate":                             4,
	"protocol":                         4,
	"report":                           5,
	"report/page":                      6, // the console's and the audit report's pages, pure (report's TestReportIsPure)
	"internal/consoletest":             6, // the fixed story the pages are tested on
	"protocol/sim":                     5, // the protocol run on a modelled cluster, checked by invariant
	"clientconfig":                     5, // Kafka client properties: no package of ours; the CLI, the test kits and kcbench share it
	"checkpoint/store":                 5, // the files of a checkpoint, local or on S3, for checkpoint
	"worker/httpauth":                  5, // who calls the HTTP API: no package of ours
	"worker":                           6,
	"internal/kafkatest":               6, // a real broker for tests
	"internal/flinkgentest":            1, // real Flink checkpoints for tests (internal/flinkgen's output)
	"internal/s3test":                  1, // the real S3-compatible server for tests (cmd/s3dev/s3.sh)
	"worker/daemon":                    7,
	"internal/workertest":              7, // fixtures over worker and kafkatest
	"worker/console":                   8,
	"cmd/kcleanup":                     9,
	"fsm/cmd/gendiagram":               9,
	"internal/kafkatest/cmd/devcerts":  9,
	"internal/kafkatest/cmd/waitkafka": 9,
	"internal/architecture":            9,
	"internal/clustertest":             9, // tests on the three-broker cluster
	"internal/clustertest/netfault":    9, // network faults (toxiproxy) on the three-broker cluster
	"internal/clustertest/limits":      9, // resource limits (descriptors, GOMEMLIMIT, max.connections) on the three-broker cluster
	"deploy":                           9, // tests of the deploy files, the image and the alert rules
}

// packages lists every folder of the module that holds Go files (its own module's folders,
// such as cmd/kcbench, and testdata are not this module's).
func packages(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "node_modules") {
			return filepath.SkipDir
		}
		if path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			}
		}
		if m, _ := filepath.Glob(filepath.Join(path, "*.go")); len(m) > 0 {
			rel, _ := filepath.Rel(root, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// imports lists the packages of this module that the non-test files of pkg import.
func imports(t *testing.T, root, pkg string) []string {
	t.Helper()
	p, err := build.Default.ImportDir(filepath.Join(root, pkg), 0)
	if err != nil {
		t.Fatalf("%s: %v", pkg, err)
	}
	var out []string
	for _, imp := range p.Imports {
		if dep, ok := strings.CutPrefix(imp, module+"/"); ok {
			out = append(out, dep)
		}
	}
	return out
}

func TestImportsFlowOneWay(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	all := packages(t, root)
	if len(all) < 10 {
		t.Fatalf("found only %d packages under %s: %v", len(all), root, all)
	}
	for _, pkg := range all {
		rank, ok := layer[pkg]
		if !ok {
			t.Errorf("package %s has no rank: add it to layer, where the design puts it (docs/architecture.md)", pkg)
			continue
		}
		for _, dep := range imports(t, root, pkg) {
			if r, ranked := layer[dep]; ranked && r >= rank {
				t.Errorf("%s imports %s: imports flow cmd → worker → report → {gate, protocol} → projector → fsm → events (docs/architecture.md)", pkg, dep)
			}
		}
	}
	for pkg := range layer {
		if !slices.Contains(all, pkg) {
			t.Errorf("layer ranks %s, which is not a package of the module: remove it", pkg)
		}
	}
}

// TestProductImportsNoTestKit: the test kits (internal/kafkatest, internal/workertest) are
// imported by tests and development tools only, never by the product's own files.
func TestProductImportsNoTestKit(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range packages(t, root) {
		if strings.HasPrefix(pkg, "internal/") {
			continue
		}
		for _, dep := range imports(t, root, pkg) {
			if strings.HasPrefix(dep, "internal/kafkatest") || strings.HasPrefix(dep, "internal/workertest") || strings.HasPrefix(dep, "internal/flinkgentest") || strings.HasPrefix(dep, "internal/consoletest") || strings.HasPrefix(dep, "internal/s3test") {
				t.Errorf("%s imports the test kit %s", pkg, dep)
			}
		}
	}
}
