package projector

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestEventsDocListsEveryRejectionReason checks the reasons table of
// docs/events.md against Reasons(): every reason the fold gives has its
// row, and every row is a reason it gives.
func TestEventsDocListsEveryRejectionReason(t *testing.T) {
	doc, err := os.ReadFile("../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| reason | the record |\n| --- | --- |\n")
	if !ok {
		t.Fatal("docs/events.md has no table headed '| reason | the record |'")
	}
	var documented []string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
		documented = append(documented, name)
	}
	var code []string
	for _, r := range Reasons() {
		code = append(code, string(r))
		if !slices.Contains(documented, string(r)) {
			t.Errorf("docs/events.md: the rejection reasons table has no row for %q, which the fold gives (projector.Reasons)", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(code, d) {
			t.Errorf("docs/events.md: the rejection reasons table has a row for %q, which is not in projector.Reasons", d)
		}
	}
}
