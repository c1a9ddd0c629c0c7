package gate

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsListEveryReason: the operator guide's table of what the gate checks lists every reason
// a verdict can carry with its class, and docs/deploy.md's HTTP table every answer that is not a
// verdict (the reasons of class invalid, and shutting-down), so that a reason added to the table
// in reasons.go and nowhere else fails here.
func TestDocsListEveryReason(t *testing.T) {
	guide, err := os.ReadFile("../docs/operator-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	deploy, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	// A row of the guide's table: | check | `reason`[, `reason`] | class | meaning |
	row := regexp.MustCompile("(?m)^\\|[^|]*\\| ((?:`[a-z-]+`(?:, )?)+) \\| (refused|cannot tell) \\|")
	documented := map[Reason]Class{}
	for _, m := range row.FindAllStringSubmatch(string(guide), -1) {
		class := Refused
		if m[2] == "cannot tell" {
			class = CannotTell
		}
		for _, r := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(m[1], -1) {
			documented[Reason(r[1])] = class
		}
	}
	for _, r := range Reasons() {
		httpOnly := r.Class() == Invalid || r == ShuttingDown
		switch {
		case httpOnly && !strings.Contains(string(deploy), "`"+string(r)+"`") && !strings.Contains(string(deploy), `"reason":"`+string(r)+`"`):
			t.Errorf("docs/deploy.md's HTTP table does not name %s", r)
		case !httpOnly && documented[r] == "":
			t.Errorf("docs/operator-guide.md's table of the gate has no row for %s (%s)", r, r.Class())
		case !httpOnly && documented[r] != r.Class():
			t.Errorf("docs/operator-guide.md says %s is %s; the gate says %s", r, documented[r], r.Class())
		}
	}
	for r := range documented {
		if !slices.Contains(Reasons(), r) {
			t.Errorf("docs/operator-guide.md documents %s, which is no reason of the gate", r)
		}
	}
}
