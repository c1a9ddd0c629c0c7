package deploy

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "copy the deploy files into docs/deploy.md's blocks instead of comparing")

// docBlock is a copy of a deploy file in docs/deploy.md: the file's path in an HTML comment on
// the line before a fenced block.
var docBlock = regexp.MustCompile("(?s)<!-- (deploy/[^ ]+) -->\n```[a-z]*\n(.*?)```\n")

// TestDeployDocShowsTheFiles: docs/deploy.md shows the deploy files as they are. Each copy it
// holds equals its file (-rewrite copies them again), and every file an operator deploys is
// shown or linked.
func TestDeployDocShowsTheFiles(t *testing.T) {
	root := repoRoot(t)
	docPath := filepath.Join(root, "docs/deploy.md")
	data, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	blocks := docBlock.FindAllStringSubmatchIndex(doc, -1)
	if len(blocks) < 4 {
		t.Fatalf("docs/deploy.md shows %d deploy files, want the systemd unit, its environment, the Deployment and the ConfigMap", len(blocks))
	}
	var out strings.Builder
	last := 0
	for _, b := range blocks {
		name, shown := doc[b[2]:b[3]], doc[b[4]:b[5]]
		file, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("docs/deploy.md shows %s, which does not exist", name)
			continue
		}
		if shown != string(file) && !*rewrite {
			t.Errorf("docs/deploy.md's copy of %s differs from the file: run go test ./deploy -run TestDeployDocShowsTheFiles -rewrite", name)
		}
		out.WriteString(doc[last:b[4]])
		out.Write(file)
		last = b[5]
	}
	out.WriteString(doc[last:])
	if *rewrite && out.String() != doc {
		if err := os.WriteFile(docPath, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	files, _ := filepath.Glob(filepath.Join(root, "deploy/*/*"))
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		if strings.HasSuffix(rel, ".go") || strings.HasPrefix(rel, "deploy/image/") {
			continue // the image's files are make image's business
		}
		if !strings.Contains(doc, filepath.ToSlash(rel)) && !strings.Contains(doc, filepath.Base(rel)+"`](../"+filepath.ToSlash(rel)) {
			t.Errorf("docs/deploy.md neither shows nor links %s", rel)
		}
	}
}
