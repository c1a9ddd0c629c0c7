package deploy

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

const prometheusRuleFile = "deploy/kubernetes/monitoring/prometheusrule.yaml"

// TestPrometheusRuleMatchesTheRules keeps the Prometheus Operator's PrometheusRule equal to the
// rules promtool tests: its spec.groups must be deploy/prometheus/kcleanup.rules.yaml's groups,
// value for value, so that an operator deploying either gets the same alerts.
func TestPrometheusRuleMatchesTheRules(t *testing.T) {
	root := repoRoot(t)
	read := func(file string, into any) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	var rules struct {
		Groups []map[string]any `yaml:"groups"`
	}
	read(rulesFile, &rules)
	var pr struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Groups []map[string]any `yaml:"groups"`
		} `yaml:"spec"`
	}
	read(prometheusRuleFile, &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Fatalf("%s is a %s %s, want a monitoring.coreos.com/v1 PrometheusRule", prometheusRuleFile, pr.APIVersion, pr.Kind)
	}
	if len(pr.Spec.Groups) != len(rules.Groups) {
		t.Fatalf("%s has %d groups, %s %d: copy the groups over", prometheusRuleFile, len(pr.Spec.Groups), rulesFile, len(rules.Groups))
	}
	for i, g := range rules.Groups {
		if reflect.DeepEqual(g, pr.Spec.Groups[i]) {
			continue
		}
		want, _ := g["rules"].([]any)
		got, _ := pr.Spec.Groups[i]["rules"].([]any)
		for j := range max(len(want), len(got)) {
			var w, o any
			if j < len(want) {
				w = want[j]
			}
			if j < len(got) {
				o = got[j]
			}
			if !reflect.DeepEqual(w, o) {
				t.Errorf("group %v, rule %d: %s has\n%v\n%s has\n%v", g["name"], j, rulesFile, w, prometheusRuleFile, o)
			}
		}
		if !t.Failed() {
			t.Errorf("group %d differs between %s and %s (name or interval)", i, rulesFile, prometheusRuleFile)
		}
	}
}
