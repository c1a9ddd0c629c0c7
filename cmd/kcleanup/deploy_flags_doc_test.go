package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kcleanup/kcleanup/internal/repo"
)

// TestDeployDocFlagTableIsTheWorkersFlags checks the flag table of
// docs/deploy.md ("Flags") against `kcleanup worker`'s command tree: every
// flag of the command has a row, every row names a flag it has, and the
// environment variable a row names is the one the flag reads.
func TestDeployDocFlagTableIsTheWorkersFlags(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| flag | env | default | meaning |\n| --- | --- | --- | --- |\n")
	if !ok {
		t.Fatal("docs/deploy.md has no table headed '| flag | env | default | meaning |'")
	}
	w := workerCommand(t, newRootCmd())
	rows := map[string]string{} // flag name: the env column
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			break
		}
		cells := strings.Split(line, " | ")
		name := strings.Fields(strings.Trim(strings.TrimPrefix(cells[0], "| "), "`"))[0]
		rows[strings.TrimPrefix(name, "--")] = strings.Trim(cells[1], "`")
	}
	if len(rows) < 10 {
		t.Fatalf("read only %d rows from the flag table of docs/deploy.md: %v", len(rows), rows)
	}
	// The worker's own flags (its --control-topic shadows the global one);
	// the other globals are a sentence above the table.
	var flags []*pflag.Flag
	w.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			flags = append(flags, f)
		}
	})
	var names []string
	for _, f := range flags {
		names = append(names, f.Name)
		env, ok := rows[f.Name]
		if !ok {
			t.Errorf("docs/deploy.md: the flag table has no row for --%s, a flag of kcleanup worker", f.Name)
			continue
		}
		m := envInUsage.FindStringSubmatch(f.Usage)
		switch {
		case m == nil && env != "—":
			t.Errorf("docs/deploy.md: --%s's row names the variable %s, but the flag reads none", f.Name, env)
		case m != nil && env != m[1]:
			t.Errorf("docs/deploy.md: --%s's row names the variable %q, but the flag reads %s", f.Name, env, m[1])
		}
	}
	for name := range rows {
		if !slices.Contains(names, name) {
			t.Errorf("docs/deploy.md: the flag table has a row for --%s, which kcleanup worker does not have", name)
		}
	}
}
