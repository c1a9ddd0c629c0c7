package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/internal/repo"
	"github.com/kcleanup/kcleanup/worker"
)

// TestWorkerHelpAndDeployAgree: every failpoint step declared in worker/failpoint.go is in
// worker.Failpoints, in `kcleanup worker --help` and in docs/deploy.md's failpoint table (the help
// once named 2 of 5), and every "(exit N)" in docs/deploy.md says the word --help gives N.
func TestWorkerHelpAndDeployAgree(t *testing.T) {
	clearEnv(t)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "worker", "failpoint.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || name.Name == "FailpointEnv" || name.Name == "FailpointStop" {
					continue
				}
				step, _ := strconv.Unquote(lit.Value)
				declared = append(declared, step)
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("found no failpoint constant in worker/failpoint.go")
	}
	deploy, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	table := string(deploy)[strings.Index(string(deploy), "## Testing aid: failpoints"):]
	code, help, _ := runCLI(t, "worker", "--help")
	if code != exitOK {
		t.Fatalf("worker --help: exit %d", code)
	}
	for _, step := range declared {
		if !slices.Contains(worker.Failpoints(), step) {
			t.Errorf("worker.Failpoints() lacks %s", step)
		}
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(step) + `\b`).MatchString(help) {
			t.Errorf("kcleanup worker --help does not name failpoint %s", step)
		}
		if !strings.Contains(table, "| `"+step+"` |") {
			t.Errorf("docs/deploy.md's failpoint table has no row for %s", step)
		}
	}
	if len(worker.Failpoints()) != len(declared) {
		t.Errorf("worker.Failpoints() = %v; worker/failpoint.go declares %v", worker.Failpoints(), declared)
	}

	words := map[string]string{}
	for _, c := range exitCodes {
		words[strconv.Itoa(c.code)] = c.word
	}
	mentions := regexp.MustCompile(`([^\n]{0,40})\(exit (\d+)`).FindAllStringSubmatch(string(deploy), -1)
	for _, m := range mentions {
		if w, ok := words[m[2]]; !ok || !strings.Contains(m[1], w) {
			t.Errorf("docs/deploy.md: %q calls exit %s something else than %q", m[0], m[2], w)
		}
	}
}
