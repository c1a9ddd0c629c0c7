package report

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/internal/repo"
)

const module = "github.com/kcleanup/kcleanup"

// imports lists the packages the non-test files of a package of this module import.
func imports(t *testing.T, root, pkg string) []string {
	t.Helper()
	p, err := build.Default.ImportDir(filepath.Join(root, pkg), 0)
	if err != nil {
		t.Fatalf("%s: %v", pkg, err)
	}
	return p.Imports
}

// TestReportIsPure keeps this package and report/page (the console's and the audit report's
// pages) pure builders of documents: no Kafka client, metrics,
// container or CLI library anywhere in the closure of what it imports from this module, no
// library but cockroachdb/errors of their own, no os, no clock, no goroutine.
func TestReportIsPure(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	std := func(imp string) bool { return !strings.Contains(strings.Split(imp, "/")[0], ".") }
	io := []string{"github.com/twmb/franz-go", "github.com/prometheus/", "github.com/testcontainers/", "github.com/spf13/"}
	pure := []string{"report", "report/page"}
	allowed := func(pkg, imp string) bool {
		if slices.Contains(pure, pkg) {
			return std(imp) || imp == "github.com/cockroachdb/errors" || strings.HasPrefix(imp, module+"/")
		}
		return !slices.ContainsFunc(io, func(p string) bool { return strings.HasPrefix(imp, p) })
	}
	seen := map[string]bool{}
	var walk func(pkg string)
	walk = func(pkg string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		for _, imp := range imports(t, root, pkg) {
			switch dep, ours := strings.CutPrefix(imp, module+"/"); {
			case !allowed(pkg, imp):
				t.Errorf("report imports %s through %s: a pure package imports no Kafka client or other library", imp, pkg)
			case ours:
				walk(dep)
			case slices.Contains(pure, pkg) && slices.Contains([]string{"os", "os/exec", "net", "net/http", "syscall", "io/fs"}, imp):
				t.Errorf("%s imports %s: a pure package does no I/O", pkg, imp)
			}
		}
	}
	for _, pkg := range pure {
		walk(pkg)
	}

	// The clock and goroutines, in the pure packages' own files.
	clock := []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}
	var files []string
	for _, pkg := range pure {
		m, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil || len(m) == 0 {
			t.Fatalf("no Go files in %s: %v", pkg, err)
		}
		files = append(files, m...)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && slices.Contains(clock, n.Sel.Name) {
					t.Errorf("%s: time.%s: a pure package reads no clock; take the time as a parameter", fset.Position(n.Pos()), n.Sel.Name)
				}
			case *ast.GoStmt:
				t.Errorf("%s: a pure package starts no goroutine", fset.Position(n.Pos()))
			}
			return true
		})
	}
}
