package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

const (
	rulesFile     = "deploy/prometheus/kcleanup.rules.yaml"
	rulesTestFile = "deploy/prometheus/kcleanup.rules.test.yaml"
	// runbookBase is where every alert's runbook_url points: a section of the operator guide.
	runbookBase = "https://github.com/kcleanup/kcleanup/blob/main/docs/operator-guide.md#"
)

type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readRules(t *testing.T, root string) []alertRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var rules []alertRule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		t.Fatalf("%s has no rules", rulesFile)
	}
	return rules
}

type rulesTests struct {
	Tests []struct {
		InputSeries []struct {
			Series string `yaml:"series"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readRulesTests(t *testing.T, root string) rulesTests {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rulesTestFile))
	if err != nil {
		t.Fatal(err)
	}
	var rt rulesTests
	if err := yaml.Unmarshal(data, &rt); err != nil {
		t.Fatalf("%s: %v", rulesTestFile, err)
	}
	return rt
}

// TestAlertRules runs promtool on the rules (check rules: syntax, templates) and their unit
// tests (test rules), and checks that the unit tests see each alert fire and not fire, and that
// each alert tells the operator what to do and where the runbook is.
func TestAlertRules(t *testing.T) {
	promtool := requireTool(t, "promtool", "promtool")
	root := repoRoot(t)
	for _, args := range [][]string{{"check", "rules", filepath.Base(rulesFile)}, {"test", "rules", filepath.Base(rulesTestFile)}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = filepath.Join(root, "deploy/prometheus")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	guide, err := os.ReadFile(filepath.Join(root, "docs/operator-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := markdownAnchors(string(guide))
	tests := readRulesTests(t, root)
	for _, r := range readRules(t, root) {
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" || r.Labels["severity"] == "" {
			t.Errorf("%s: want a summary, a description and a severity", r.Alert)
		}
		anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookBase)
		if !ok || !slices.Contains(anchors, anchor) {
			t.Errorf("%s: runbook_url %q is not a section of docs/operator-guide.md (%s<anchor>)", r.Alert, r.Annotations["runbook_url"], runbookBase)
		}
		fires, silent := false, false
		for _, tc := range tests.Tests {
			for _, at := range tc.AlertRuleTest {
				if at.Alertname != r.Alert {
					continue
				}
				silent = silent || len(at.ExpAlerts) == 0
				for _, e := range at.ExpAlerts {
					fires = true
					// promtool compares the rendered annotations; a label the alert does not
					// carry would render empty, so each one the templates use must be there.
					for _, l := range templateLabels(r.Annotations) {
						if _, ok := e.ExpLabels[l]; !ok {
							t.Errorf("%s: the annotations use $labels.%s, which the alert does not carry (%v)", r.Alert, l, e.ExpLabels)
						}
					}
				}
			}
		}
		if !fires || !silent {
			t.Errorf("%s: %s must test that it fires (%v) and that it does not (%v)", r.Alert, rulesTestFile, fires, silent)
		}
	}
}

var templateLabel = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)

func templateLabels(annotations map[string]string) []string {
	var out []string
	for _, v := range annotations {
		for _, m := range templateLabel.FindAllStringSubmatch(v, -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// markdownAnchors are the anchors GitHub gives the headings of a Markdown document.
func markdownAnchors(doc string) []string {
	var out []string
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range title {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// exported reads worker/daemon/metrics.go, where every kcleanup_* family a worker exports is
// named, and returns the metric names and the label names it holds as string literals.
func exported(t *testing.T, root string) (metrics, labels []string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "worker/daemon/metrics.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		switch {
		case err != nil || !name.MatchString(s):
		case strings.HasPrefix(s, "kcleanup_"):
			metrics = append(metrics, s)
		default:
			labels = append(labels, s)
		}
		return true
	})
	if len(metrics) < 15 {
		t.Fatalf("found only %d metric names in worker/daemon/metrics.go: %v", len(metrics), metrics)
	}
	return metrics, labels
}

var (
	metricName     = regexp.MustCompile(`\bkcleanup_[a-z0-9_]+\b`)
	matcherLabel   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	groupingLabels = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	// The labels a scrape adds (job, instance) and a histogram's bucket bound.
	targetLabels = []string{"job", "instance", "le"}
)

// TestAlertRulesUseExportedMetrics fails when a rule, or a series its unit tests feed it, names
// a metric or a label a worker does not export: promtool would happily test rules on series
// no worker has.
func TestAlertRulesUseExportedMetrics(t *testing.T) {
	root := repoRoot(t)
	metrics, labels := exported(t, root)
	knownMetric := func(m string) bool {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(m, suffix); ok && slices.Contains(metrics, base) {
				return true
			}
		}
		return false
	}
	knownLabel := func(l string) bool { return slices.Contains(labels, l) || slices.Contains(targetLabels, l) }
	check := func(where, text string) {
		for _, m := range metricName.FindAllString(text, -1) {
			if !knownMetric(m) {
				t.Errorf("%s names %s, which worker/daemon/metrics.go does not export", where, m)
			}
		}
		var used []string
		for _, m := range matcherLabel.FindAllStringSubmatch(text, -1) {
			used = append(used, m[1])
		}
		for _, m := range groupingLabels.FindAllStringSubmatch(text, -1) {
			for _, l := range strings.Split(m[1], ",") {
				used = append(used, strings.TrimSpace(l))
			}
		}
		for _, l := range used {
			if l != "" && !knownLabel(l) {
				t.Errorf("%s uses the label %s, which no metric of worker/daemon/metrics.go has", where, l)
			}
		}
	}
	rules := readRules(t, root)
	for _, r := range rules {
		check(r.Alert+" (expr)", r.Expr)
		if !metricName.MatchString(r.Expr) {
			t.Errorf("%s: expr %q names no kcleanup metric", r.Alert, r.Expr)
		}
		for _, l := range templateLabels(r.Annotations) {
			if !knownLabel(l) {
				t.Errorf("%s: annotations use $labels.%s, which no metric has", r.Alert, l)
			}
		}
	}
	for _, tc := range readRulesTests(t, root).Tests {
		for _, s := range tc.InputSeries {
			name, _, _ := strings.Cut(s.Series, "{")
			if !knownMetric(name) {
				t.Errorf("%s: input series %s: no worker exports %s", rulesTestFile, s.Series, name)
			}
			check(rulesTestFile+" series "+s.Series, s.Series)
		}
	}
}

// workerScrape is what GET /metrics of a worker replica serving control topic a.kcleanup
// answers, configured as `kcleanup worker` configures it and not yet run (New connects to
// nothing): every family a replica always exports, by name, with the label sets of its series.
func workerScrape(t *testing.T) map[string][]map[string]string {
	t.Helper()
	c, err := worker.Connect(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := daemon.New(c, daemon.WithControlTopics("a.kcleanup"))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	out := map[string][]map[string]string{}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			out[name] = append(out[name], labels)
		}
	}
	return out
}

// mirrorFamilies are exported only while a Flink Agents mirror is attached, the data
// families once the data topic's offsets were listed, and the retention families by the
// owner of a control topic with a retention policy (cmd/kcleanup's
// TestRetentionFollowsRealCheckpoints scrapes kcleanup_retention_blocked), so a replica that serves a bare control
// topic and connects to nothing does not show them; worker/daemon's
// TestWorkerReportsAMirrorItCannotWrite and TestTombstoneWatch scrape them with their labels,
// and TestAlertRulesUseExportedMetrics finds them in metrics.go.
var mirrorFamilies = regexp.MustCompile(`^kcleanup_(mirror|data|retention)_`)

var seriesLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)

// TestAlertRulesUseAWorkersSeries scrapes a real worker's /metrics and holds the rules and
// their unit tests to it: each family a rule or an input series names is one the worker
// exports (or a mirror family, exported with a mirror only), each input series carries exactly
// the labels the worker's series of that family carry (plus the scrape's job and instance), and
// each label value they name (state="COMMITTED") is one the worker exports.
func TestAlertRulesUseAWorkersSeries(t *testing.T) {
	root := repoRoot(t)
	scrape := workerScrape(t)
	if len(scrape["kcleanup_operations"]) == 0 || len(scrape["kcleanup_owner"]) == 0 {
		t.Fatalf("the worker's /metrics lacks kcleanup_operations or kcleanup_owner: %v", scrape)
	}
	exportedValue := func(family, label, value string) bool {
		for _, ls := range scrape[family] {
			if ls[label] == value {
				return true
			}
		}
		return false
	}
	checkValues := func(where, family, text string) {
		for _, m := range seriesLabel.FindAllStringSubmatch(text, -1) {
			label, op, value := m[1], m[2], m[3]
			if slices.Contains(targetLabels, label) || label == "control_topic" || label == "mirror_topic" {
				continue // set by the scrape, or the operator's own names
			}
			for _, v := range strings.Split(value, "|") {
				if (op == "=" || op == "=~") && !exportedValue(family, label, v) {
					t.Errorf("%s: %s{%s=%q}: the worker exports no such series", where, family, label, v)
				}
			}
		}
	}
	for _, r := range readRules(t, root) {
		for _, sel := range regexp.MustCompile(`(kcleanup_[a-z0-9_]+)(\{[^}]*\})?`).FindAllStringSubmatch(r.Expr, -1) {
			family := sel[1]
			if _, ok := scrape[family]; !ok && !mirrorFamilies.MatchString(family) {
				t.Errorf("%s names %s, which a worker's /metrics does not have", r.Alert, family)
			}
			checkValues(r.Alert, family, sel[2])
		}
	}
	for _, tc := range readRulesTests(t, root).Tests {
		for _, s := range tc.InputSeries {
			family, labels, _ := strings.Cut(s.Series, "{")
			series, ok := scrape[family]
			if !ok {
				if !mirrorFamilies.MatchString(family) {
					t.Errorf("%s: input series %s: a worker's /metrics has no %s", rulesTestFile, s.Series, family)
				}
				continue
			}
			var names []string
			for _, m := range seriesLabel.FindAllStringSubmatch(labels, -1) {
				if m[1] != "job" && m[1] != "instance" {
					names = append(names, m[1])
				}
			}
			slices.Sort(names)
			var want []string
			for l := range series[0] {
				want = append(want, l)
			}
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("%s: input series %s has the labels %v; the worker's %s has %v", rulesTestFile, s.Series, names, family, want)
			}
			checkValues(rulesTestFile, family, labels)
		}
	}
}
