package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/kcleanup/kcleanup/clientconfig"
	"github.com/kcleanup/kcleanup/internal/repo"
	"github.com/kcleanup/kcleanup/worker"
	"github.com/kcleanup/kcleanup/worker/console"
	"github.com/kcleanup/kcleanup/worker/daemon"
)

// The deploy files (deploy/kubernetes, deploy/systemd) start `kcleanup worker` with flags,
// KCLEANUP_* variables, a port and HTTP paths. The tests below check each against this binary:
// the command line and environment are parsed by the real command tree (what `kcleanup worker
// --help` shows), the paths are asked of the daemon's real HTTP handler, the client properties
// are parsed by the real --command-config reader. A renamed flag, variable or route fails here,
// not in an operator's rollout.

// goRuntimeEnv are the variables besides KCLEANUP_* a deploy file may set: the Go runtime's.
var goRuntimeEnv = []string{"GOMEMLIMIT", "GOMAXPROCS", "GOGC", "GODEBUG"}

var envInUsage = regexp.MustCompile(`\benv (KCLEANUP_[A-Z_]+)`)

// workerEnvNames are the environment variables `kcleanup worker` reads for its flags, as its
// flags' help says them ("(env KCLEANUP_…)"), its own and the global ones.
func workerEnvNames(t *testing.T) []string {
	t.Helper()
	w := workerCommand(t, newRootCmd())
	var names []string
	for _, fs := range []*pflag.FlagSet{w.LocalFlags(), w.InheritedFlags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			for _, m := range envInUsage.FindAllStringSubmatch(f.Usage, -1) {
				if !slices.Contains(names, m[1]) {
					names = append(names, m[1])
				}
			}
		})
	}
	slices.Sort(names)
	if len(names) < 8 {
		t.Fatalf("found only %d KCLEANUP_* variables in the worker's flags: %v", len(names), names)
	}
	return names
}

func workerCommand(t *testing.T, root *cobra.Command) *cobra.Command {
	t.Helper()
	w, _, err := root.Find([]string{"worker"})
	if err != nil || w.Name() != "worker" {
		t.Fatalf("no worker command: %v", err)
	}
	return w
}

// parseWorkerInvocation parses args (after the binary: "worker", flags…) with env as the only
// KCLEANUP_* variables, exactly as `kcleanup worker` would before it connects, and returns what
// it resolved.
func parseWorkerInvocation(t *testing.T, args []string, env map[string]string) (globalOptions, workerOptions, error) {
	t.Helper()
	for _, name := range workerEnvNames(t) {
		t.Setenv(name, "") // restored when the test ends
		os.Unsetenv(name)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	root := newRootCmd()
	var g globalOptions
	var o workerOptions
	workerCommand(t, root).RunE = func(cmd *cobra.Command, _ []string) error {
		var err error
		if g, err = resolveGlobals(cmd); err != nil {
			return err
		}
		o, err = parseWorkerFlags(cmd, g)
		return err
	}
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.Execute()
	return g, o, err
}

// checkEnv fails for a variable the binary does not read.
func checkEnv(t *testing.T, source string, names []string) {
	t.Helper()
	known := workerEnvNames(t)
	for _, n := range names {
		if !slices.Contains(known, n) && !slices.Contains(goRuntimeEnv, n) {
			t.Errorf("%s sets %s, which kcleanup worker does not read (it reads %s; and the Go runtime's %s)",
				source, n, strings.Join(known, ", "), strings.Join(goRuntimeEnv, ", "))
		}
	}
}

// servedPath reports whether the worker's HTTP handler (the daemon's routes and the console, as
// runWorker mounts them) serves GET path: anything but 404 and 405. New connects to nothing.
func servedPath(t *testing.T, p string) bool {
	t.Helper()
	c, err := worker.Connect(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := daemon.New(c, daemon.WithControlTopics("action-state.kcleanup"), console.Mount())
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
	return rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed
}

func TestServedPathKnowsTheRoutes(t *testing.T) {
	for p, want := range map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true, "/v1/status": true, "/": true,
		"/health": false, "/ready": false, "/v1/validate": false /* POST only */} {
		if got := servedPath(t, p); got != want {
			t.Errorf("servedPath(%s) = %v, want %v", p, got, want)
		}
	}
}

// portOf is the port of a --http-addr (host:port).
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("--http-addr %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("--http-addr %q: port %v", addr, err)
	}
	return n
}

// imageUser is the numeric uid and gid of the image's user (deploy/image/passwd).
func imageUser(t *testing.T, root string) (uid, gid int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "deploy/image/passwd"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(strings.TrimSpace(string(data)), ":")
	if len(f) != 7 {
		t.Fatalf("deploy/image/passwd: want one line of 7 fields, got %q", data)
	}
	uid, _ = strconv.Atoi(f[2])
	gid, _ = strconv.Atoi(f[3])
	return uid, gid
}

// The parts of the Kubernetes objects the tests check.
type (
	k8sObject struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   k8sMeta           `yaml:"metadata"`
		Spec       yaml.Node         `yaml:"spec"`
		Data       map[string]string `yaml:"data"`
		Resources  []string          `yaml:"resources"` // Kustomization
	}
	k8sMeta struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	k8sSelector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	k8sDeploymentSpec struct {
		Replicas int         `yaml:"replicas"`
		Selector k8sSelector `yaml:"selector"`
		Template struct {
			Metadata k8sMeta `yaml:"metadata"`
			Spec     struct {
				SecurityContext struct {
					RunAsNonRoot *bool `yaml:"runAsNonRoot"`
					RunAsUser    *int  `yaml:"runAsUser"`
					RunAsGroup   *int  `yaml:"runAsGroup"`
				} `yaml:"securityContext"`
				Containers []k8sContainer `yaml:"containers"`
				Volumes    []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
					Secret *struct {
						SecretName string `yaml:"secretName"`
					} `yaml:"secret"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	}
	k8sContainer struct {
		Name  string   `yaml:"name"`
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
		Env   []struct {
			Name      string     `yaml:"name"`
			Value     *string    `yaml:"value"`
			ValueFrom *yaml.Node `yaml:"valueFrom"`
		} `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		LivenessProbe  k8sProbe `yaml:"livenessProbe"`
		ReadinessProbe k8sProbe `yaml:"readinessProbe"`
		VolumeMounts   []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			SubPath   string `yaml:"subPath"`
		} `yaml:"volumeMounts"`
	}
	k8sProbe struct {
		HTTPGet *struct {
			Path string    `yaml:"path"`
			Port yaml.Node `yaml:"port"` // a name or a number
		} `yaml:"httpGet"`
	}
	k8sServiceSpec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string    `yaml:"name"`
			Port       int       `yaml:"port"`
			TargetPort yaml.Node `yaml:"targetPort"`
		} `yaml:"ports"`
	}
	k8sPDBSpec struct {
		MinAvailable int         `yaml:"minAvailable"`
		Selector     k8sSelector `yaml:"selector"`
	}
)

// loadKubernetes reads every object of deploy/kubernetes by kind, and the files that hold them.
func loadKubernetes(t *testing.T, dir string) (objects map[string]k8sObject, files []string) {
	t.Helper()
	objects = map[string]k8sObject{}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o k8sObject
			if err := dec.Decode(&o); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if _, dup := objects[o.Kind]; dup {
				t.Fatalf("%s: a second %s: the test knows one of each kind", p, o.Kind)
			}
			objects[o.Kind] = o
		}
		files = append(files, filepath.Base(p))
	}
	for _, kind := range []string{"Kustomization", "Deployment", "Service", "PodDisruptionBudget", "ConfigMap", "NetworkPolicy"} {
		if _, ok := objects[kind]; !ok {
			t.Fatalf("deploy/kubernetes has no %s", kind)
		}
	}
	return objects, files
}

func decodeSpec(t *testing.T, o k8sObject, into any) {
	t.Helper()
	if err := o.Spec.Decode(into); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Metadata.Name, err)
	}
}

// containerPort resolves a probe's or a Service's port (a name or a number) in c.
func containerPort(t *testing.T, c k8sContainer, port yaml.Node) int {
	t.Helper()
	if n, err := strconv.Atoi(port.Value); err == nil {
		return n
	}
	for _, p := range c.Ports {
		if p.Name == port.Value {
			return p.ContainerPort
		}
	}
	t.Errorf("port %q is not a port of container %s", port.Value, c.Name)
	return 0
}

func TestDeployFilesMatchTheWorker(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("kubernetes", func(t *testing.T) { checkKubernetes(t, root) })
	t.Run("systemd", func(t *testing.T) { checkSystemd(t, root) })
	t.Run("required anti-affinity", func(t *testing.T) { checkRequiredAntiAffinity(t, root) })
	t.Run("monitoring", func(t *testing.T) { checkMonitoring(t, root) })
	t.Run("flink restore gate", func(t *testing.T) { checkRestoreGate(t, root) })
}

func checkKubernetes(t *testing.T, root string) {
	objects, files := loadKubernetes(t, filepath.Join(root, "deploy/kubernetes"))
	kust := objects["Kustomization"]
	var images struct {
		Images []struct {
			Name   string `yaml:"name"`
			NewTag string `yaml:"newTag"`
		} `yaml:"images"`
	}
	if err := yaml.Unmarshal(kustomizationBytes(t, root), &images); err != nil {
		t.Fatal(err)
	}
	for _, im := range images.Images {
		if im.NewTag == "" || im.NewTag == "latest" {
			t.Errorf("kustomization.yaml: image %s is tagged %q: name a version (three replicas must run one, a rollback names the one it returns to)", im.Name, im.NewTag)
		}
	}
	for _, f := range files {
		if f != "kustomization.yaml" && !slices.Contains(kust.Resources, f) {
			t.Errorf("kustomization.yaml does not list %s: kubectl apply -k would leave it out", f)
		}
	}

	dep := objects["Deployment"]
	var ds k8sDeploymentSpec
	decodeSpec(t, dep, &ds)
	pod := ds.Template.Spec
	labels := ds.Template.Metadata.Labels
	if ds.Replicas != 3 {
		t.Errorf("Deployment: %d replicas, want 3", ds.Replicas)
	}
	selects := func(sel map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if !selects(ds.Selector.MatchLabels) {
		t.Errorf("Deployment: selector %v does not select its pods %v", ds.Selector.MatchLabels, labels)
	}
	uid, gid := imageUser(t, root)
	sc := pod.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != uid || sc.RunAsGroup == nil || *sc.RunAsGroup != gid {
		t.Errorf("Deployment: pod securityContext must be runAsNonRoot with the image's user %d:%d (deploy/image/passwd)", uid, gid)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment: %d containers, want the worker alone", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "worker" {
		t.Fatalf("Deployment: container args %q do not start with worker (the image's entrypoint is /kcleanup)", c.Args)
	}
	env := map[string]string{}
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
		if e.Value != nil {
			env[e.Name] = *e.Value
		} else if strings.HasPrefix(e.Name, "KCLEANUP_") {
			t.Errorf("Deployment: %s has no value the test can check", e.Name)
		}
	}
	checkEnv(t, "deploy/kubernetes/deployment.yaml", names)
	g, o, err := parseWorkerInvocation(t, c.Args, env)
	if err != nil {
		t.Fatalf("Deployment: kcleanup %s refuses its arguments or environment: %v", strings.Join(c.Args, " "), err)
	}
	port := portOf(t, o.httpAddr)

	// Ports and paths.
	found := false
	for _, p := range c.Ports {
		found = found || p.ContainerPort == port
	}
	if !found {
		t.Errorf("Deployment: the worker listens on %d (--http-addr %s); the container declares no such port", port, o.httpAddr)
	}
	for name, want := range map[string]struct {
		probe k8sProbe
		path  string
	}{"livenessProbe": {c.LivenessProbe, "/healthz"}, "readinessProbe": {c.ReadinessProbe, "/readyz"}} {
		if want.probe.HTTPGet == nil {
			t.Errorf("Deployment: %s is not an httpGet", name)
			continue
		}
		if want.probe.HTTPGet.Path != want.path || !servedPath(t, want.probe.HTTPGet.Path) {
			t.Errorf("Deployment: %s asks %s; the worker serves the probe at %s", name, want.probe.HTTPGet.Path, want.path)
		}
		if p := containerPort(t, c, want.probe.HTTPGet.Port); p != port {
			t.Errorf("Deployment: %s asks port %d; the worker listens on %d", name, p, port)
		}
	}
	ann := ds.Template.Metadata.Annotations
	if ann["prometheus.io/port"] != strconv.Itoa(port) || !servedPath(t, ann["prometheus.io/path"]) || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("Deployment: prometheus.io annotations %v do not name the worker's /metrics on %d", ann, port)
	}

	svc := objects["Service"]
	var ss k8sServiceSpec
	decodeSpec(t, svc, &ss)
	if !selects(ss.Selector) {
		t.Errorf("Service: selector %v does not select the worker's pods %v", ss.Selector, labels)
	}
	if len(ss.Ports) == 0 {
		t.Errorf("Service: no port")
	}
	for _, p := range ss.Ports {
		if got := containerPort(t, c, p.TargetPort); got != port {
			t.Errorf("Service: port %s targets %d; the worker listens on %d", p.Name, got, port)
		}
	}

	var pdb k8sPDBSpec
	decodeSpec(t, objects["PodDisruptionBudget"], &pdb)
	if !selects(pdb.Selector.MatchLabels) || pdb.MinAvailable < 1 || pdb.MinAvailable >= ds.Replicas {
		t.Errorf("PodDisruptionBudget: selector %v, minAvailable %d: want the worker's pods and 1 ≤ minAvailable < %d", pdb.Selector.MatchLabels, pdb.MinAvailable, ds.Replicas)
	}

	// The NetworkPolicy selects the worker's pods and lets callers reach the port it listens on.
	var np struct {
		PodSelector k8sSelector `yaml:"podSelector"`
		Ingress     []struct {
			Ports []struct {
				Port yaml.Node `yaml:"port"`
			} `yaml:"ports"`
		} `yaml:"ingress"`
	}
	decodeSpec(t, objects["NetworkPolicy"], &np)
	reaches := false
	for _, in := range np.Ingress {
		for _, p := range in.Ports {
			reaches = reaches || containerPort(t, c, p.Port) == port
		}
	}
	if !selects(np.PodSelector.MatchLabels) || !reaches {
		t.Errorf("NetworkPolicy: selector %v, reaches port %d: %v; want the worker's pods and its HTTP port", np.PodSelector.MatchLabels, port, reaches)
	}

	// --command-config: a file of the ConfigMap, mounted where the variable says, that the
	// real reader accepts; every store it names is mounted too.
	cm := objects["ConfigMap"]
	mountOf := func(file string) (volume, key string, ok bool) {
		for _, m := range c.VolumeMounts {
			switch {
			case m.SubPath != "" && m.MountPath == file:
				return m.Name, m.SubPath, true
			case m.SubPath == "" && path.Dir(file) == m.MountPath:
				return m.Name, path.Base(file), true
			}
		}
		return "", "", false
	}
	if g.commandConfig == "" {
		t.Fatal("Deployment: no --command-config (KCLEANUP_COMMAND_CONFIG)")
	}
	volume, key, ok := mountOf(g.commandConfig)
	if !ok {
		t.Fatalf("Deployment: --command-config %s is not in a mounted volume", g.commandConfig)
	}
	fromConfigMap := false
	for _, v := range pod.Volumes {
		fromConfigMap = fromConfigMap || (v.Name == volume && v.ConfigMap != nil && v.ConfigMap.Name == cm.Metadata.Name)
	}
	props, inMap := cm.Data[key]
	if !fromConfigMap || !inMap {
		t.Fatalf("Deployment: --command-config %s is not the key %s of ConfigMap %s", g.commandConfig, key, cm.Metadata.Name)
	}
	if _, err := clientconfig.Parse(strings.NewReader(props), "configmap.yaml client.properties"); err != nil {
		t.Errorf("ConfigMap: the client properties do not parse: %v", err)
	}
	for _, line := range strings.Split(props, "\n") {
		k, v, _ := strings.Cut(line, "=")
		if strings.HasSuffix(strings.TrimSpace(k), ".location") {
			if _, _, ok := mountOf(strings.TrimSpace(v)); !ok {
				t.Errorf("ConfigMap: %s names %s, which no volume mounts", strings.TrimSpace(k), v)
			}
		}
	}
}

// unit is a systemd unit file: section → key → values, in order.
type unit map[string]map[string][]string

func readUnit(t *testing.T, file string) unit {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, section := unit{}, ""
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: not a unit file line: %q", file, line)
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

// readEnvFile reads a systemd EnvironmentFile (KEY=VALUE lines, # comments).
func readEnvFile(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: not KEY=VALUE: %q", file, line)
		}
		env[k] = v
	}
	return env
}

func checkSystemd(t *testing.T, root string) {
	const file = "deploy/systemd/kcleanup-worker.service"
	const dropIn = "deploy/systemd/kcleanup-worker.service.d/client-properties.conf"
	u := readUnit(t, filepath.Join(root, file))
	svc := u["Service"]
	if svc == nil {
		t.Fatalf("%s: no [Service]", file)
	}
	if !slices.Contains(svc["DynamicUser"], "yes") {
		t.Errorf("%s: runs as no user it creates: want DynamicUser=yes", file)
	}
	if len(svc["User"]) > 0 {
		t.Errorf("%s: User=%v names an account nothing creates", file, svc["User"])
	}
	// The unit alone starts on PLAINTEXT: it loads no credential that may not exist.
	if len(svc["LoadCredential"]) > 0 {
		t.Errorf("%s: LoadCredential=%v fails the start where no client properties file exists: leave it to the drop-in", file, svc["LoadCredential"])
	}
	checkWorkerUnit(t, root, file, svc, false)
	// With the drop-in, --command-config is a credential the unit loads.
	merged := map[string][]string{}
	for k, v := range svc {
		merged[k] = slices.Clone(v)
	}
	for k, v := range readUnit(t, filepath.Join(root, dropIn))["Service"] {
		merged[k] = append(merged[k], v...)
	}
	checkWorkerUnit(t, root, file+" with "+path.Base(dropIn), merged, true)
}

// checkWorkerUnit runs the worker's flag parsing on a unit's [Service] section, and checks that
// --command-config is (withCredential) or is not set, and loaded as a credential when set.
func checkWorkerUnit(t *testing.T, root, file string, svc map[string][]string, withCredential bool) {
	t.Helper()
	// The environment: the EnvironmentFile (shipped beside the unit under its base name), then
	// Environment= lines; %d is the credentials directory.
	const credentials = "/run/credentials/kcleanup-worker.service"
	env := map[string]string{}
	var names []string
	for _, ef := range svc["EnvironmentFile"] {
		for k, v := range readEnvFile(t, filepath.Join(root, "deploy/systemd", path.Base(strings.TrimPrefix(ef, "-")))) {
			env[k] = v
			names = append(names, k)
		}
	}
	for _, e := range svc["Environment"] {
		k, v, _ := strings.Cut(e, "=")
		env[k] = strings.ReplaceAll(v, "%d", credentials)
		names = append(names, k)
	}
	checkEnv(t, file, names)

	if len(svc["ExecStart"]) != 1 {
		t.Fatalf("%s: want one ExecStart, got %q", file, svc["ExecStart"])
	}
	argv := strings.Fields(svc["ExecStart"][0])
	if path.Base(argv[0]) != "kcleanup" || !path.IsAbs(argv[0]) {
		t.Errorf("%s: ExecStart runs %s, not an absolute path to kcleanup", file, argv[0])
	}
	g, o, err := parseWorkerInvocation(t, argv[1:], env)
	if err != nil {
		t.Fatalf("%s: %s refuses its arguments or environment: %v", file, svc["ExecStart"][0], err)
	}
	if port := portOf(t, o.httpAddr); port != 9308 {
		t.Errorf("%s: the worker listens on %d; docs/deploy.md and the rules' runbooks say 9308", file, port)
	}
	if !withCredential {
		if g.commandConfig != "" {
			t.Errorf("%s: --command-config %q without the drop-in: the unit would not start on PLAINTEXT", file, g.commandConfig)
		}
		return
	}
	name, ok := strings.CutPrefix(g.commandConfig, credentials+"/")
	loaded := false
	for _, lc := range svc["LoadCredential"] {
		loaded = loaded || strings.HasPrefix(lc, name+":")
	}
	if g.commandConfig == "" || !ok || !loaded {
		t.Errorf("%s: --command-config %q is not a credential the unit loads (LoadCredential=%v)", file, g.commandConfig, svc["LoadCredential"])
	}
}

func kustomizationBytes(t *testing.T, root string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy/kubernetes/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
