package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// readObjects decodes every YAML document of a file.
func readObjects(t *testing.T, file string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var o map[string]any
		if err := dec.Decode(&o); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, o)
	}
}

// dig follows keys through nested maps (and the first element of a list at "[0]").
func dig(v any, keys ...string) any {
	for _, k := range keys {
		if k == "[0]" {
			l, ok := v.([]any)
			if !ok || len(l) == 0 {
				return nil
			}
			v = l[0]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func labelsOf(v any) map[string]string {
	out := map[string]string{}
	m, _ := v.(map[string]any)
	for k, x := range m {
		s, _ := x.(string)
		out[k] = s
	}
	return out
}

// checkRequiredAntiAffinity: the component patches the base's Deployment (by name) with a
// required anti-affinity over hostnames that selects the worker's pods, replacing the
// preferred term, and its kustomization lists the patch.
func checkRequiredAntiAffinity(t *testing.T, root string) {
	dir := filepath.Join(root, "deploy/kubernetes/components/required-anti-affinity")
	base, _ := loadKubernetes(t, filepath.Join(root, "deploy/kubernetes"))
	var ds k8sDeploymentSpec
	decodeSpec(t, base["Deployment"], &ds)
	podLabels := ds.Template.Metadata.Labels

	kust := readObjects(t, filepath.Join(dir, "kustomization.yaml"))
	if len(kust) != 1 || kust[0]["kind"] != "Component" {
		t.Fatalf("components/required-anti-affinity/kustomization.yaml is not one kustomize Component")
	}
	patches, _ := kust[0]["patches"].([]any)
	if len(patches) != 1 {
		t.Fatalf("components/required-anti-affinity: want one patch, got %d", len(patches))
	}
	patchFile, _ := dig(patches, "[0]", "path").(string)
	patch := readObjects(t, filepath.Join(dir, patchFile))
	if len(patch) != 1 || patch[0]["kind"] != "Deployment" || dig(patch[0], "metadata", "name") != base["Deployment"].Metadata.Name {
		t.Fatalf("%s does not patch the Deployment %s", patchFile, base["Deployment"].Metadata.Name)
	}
	anti := dig(patch[0], "spec", "template", "spec", "affinity", "podAntiAffinity")
	if dig(anti, "$patch") != "replace" || dig(anti, "preferredDuringSchedulingIgnoredDuringExecution") != nil {
		t.Errorf("%s: the podAntiAffinity must replace the base's preferred term ($patch: replace)", patchFile)
	}
	term := dig(anti, "requiredDuringSchedulingIgnoredDuringExecution", "[0]")
	if dig(term, "topologyKey") != "kubernetes.io/hostname" {
		t.Errorf("%s: required term's topologyKey is %v, want kubernetes.io/hostname", patchFile, dig(term, "topologyKey"))
	}
	sel := labelsOf(dig(term, "labelSelector", "matchLabels"))
	if len(sel) == 0 {
		t.Errorf("%s: the required term selects no pods", patchFile)
	}
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("%s: the required term selects %v; the worker's pods are %v", patchFile, sel, podLabels)
		}
	}
}

// checkMonitoring: the ServiceMonitor selects the Service and scrapes a port it names at the
// worker's metrics path; the kustomization lists every file of the directory.
func checkMonitoring(t *testing.T, root string) {
	dir := filepath.Join(root, "deploy/kubernetes/monitoring")
	base, _ := loadKubernetes(t, filepath.Join(root, "deploy/kubernetes"))
	svc := base["Service"]
	var ss k8sServiceSpec
	decodeSpec(t, svc, &ss)

	kust := readObjects(t, filepath.Join(dir, "kustomization.yaml"))
	resources, _ := kust[0]["resources"].([]any)
	paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	kinds := map[string]map[string]any{}
	for _, p := range paths {
		f := filepath.Base(p)
		if f == "kustomization.yaml" {
			continue
		}
		if !slices.Contains(resources, any(f)) {
			t.Errorf("monitoring/kustomization.yaml does not list %s", f)
		}
		for _, o := range readObjects(t, p) {
			kinds[o["kind"].(string)] = o
		}
	}
	sm := kinds["ServiceMonitor"]
	if sm == nil || kinds["PrometheusRule"] == nil {
		t.Fatalf("deploy/kubernetes/monitoring wants a ServiceMonitor and a PrometheusRule; has %v", kinds)
	}
	sel := labelsOf(dig(sm, "spec", "selector", "matchLabels"))
	if len(sel) == 0 {
		t.Errorf("ServiceMonitor selects no Service")
	}
	for k, v := range sel {
		if svc.Metadata.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %v; the Service %s is labelled %v", sel, svc.Metadata.Name, svc.Metadata.Labels)
		}
	}
	port, _ := dig(sm, "spec", "endpoints", "[0]", "port").(string)
	named := false
	for _, p := range ss.Ports {
		named = named || p.Name == port
	}
	if !named {
		t.Errorf("ServiceMonitor scrapes port %q, which the Service does not name", port)
	}
	if p := dig(sm, "spec", "endpoints", "[0]", "path"); p != "/metrics" || !servedPath(t, "/metrics") {
		t.Errorf("ServiceMonitor scrapes %v; the worker serves /metrics", p)
	}
}

// checkRestoreGate: the example Job runs `kcleanup validate --checkpoint` on the path the
// FlinkDeployment restores from, with flags the real validate command accepts, fails at once on
// a refusal (exit 3) and on bad usage, and retries a "cannot tell" (exit 4).
func checkRestoreGate(t *testing.T, root string) {
	dir := filepath.Join(root, "deploy/kubernetes/examples/flink-restore-gate")
	job := readObjects(t, filepath.Join(dir, "restore-gate-job.yaml"))
	fd := readObjects(t, filepath.Join(dir, "flinkdeployment.yaml"))
	if len(job) != 1 || job[0]["kind"] != "Job" || len(fd) != 1 || fd[0]["kind"] != "FlinkDeployment" {
		t.Fatalf("examples/flink-restore-gate wants one Job and one FlinkDeployment")
	}
	pod := dig(job[0], "spec", "template", "spec")
	if dig(pod, "restartPolicy") != "Never" {
		t.Errorf("Job: restartPolicy %v; podFailurePolicy needs Never", dig(pod, "restartPolicy"))
	}
	c := dig(pod, "containers", "[0]")
	var args []string
	for _, a := range dig(c, "args").([]any) {
		args = append(args, a.(string))
	}
	if len(args) == 0 || args[0] != "validate" {
		t.Fatalf("Job: args %q do not start with validate (the image's entrypoint is /kcleanup)", args)
	}
	validate, _, err := newRootCmd().Find([]string{"validate"})
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.ParseFlags(args[1:]); err != nil {
		t.Fatalf("Job: kcleanup %s: %v", strings.Join(args, " "), err)
	}
	checkpoint, _ := validate.Flags().GetString("checkpoint")
	if want := dig(fd[0], "spec", "job", "initialSavepointPath"); checkpoint == "" || checkpoint != want {
		t.Errorf("Job: --checkpoint %q; the FlinkDeployment restores from %v", checkpoint, want)
	}
	action := map[int]string{}
	rules, _ := dig(job[0], "spec", "podFailurePolicy", "rules").([]any)
	for _, r := range rules {
		for _, v := range dig(r, "onExitCodes", "values").([]any) {
			if dig(r, "onExitCodes", "operator") == "In" && dig(r, "onExitCodes", "containerName") == dig(c, "name") {
				action[v.(int)] = dig(r, "action").(string)
			}
		}
	}
	for code, want := range map[int]string{1: "FailJob", 2: "FailJob", exitRefused: "FailJob", exitCannotTell: "Count"} {
		if action[code] != want {
			t.Errorf("Job: exit %d gets %q, want %s (a refusal never turns into an allow by retrying; cannot tell may)", code, action[code], want)
		}
	}
}
