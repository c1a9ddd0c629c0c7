package deploy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.yaml.in/yaml/v3"
)

// ociArchive is an OCI image layout read from its tar archive: file name → content.
type ociArchive map[string][]byte

func readOCIArchive(t *testing.T, file string) ociArchive {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := ociArchive{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return a
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			a[strings.TrimPrefix(h.Name, "./")] = data
		}
	}
}

// blob returns the blob of d, checked against its digest and size, decoded into v unless v is nil.
func (a ociArchive) blob(t *testing.T, d ocispec.Descriptor, v any) []byte {
	t.Helper()
	data, ok := a["blobs/"+d.Digest.Algorithm().String()+"/"+d.Digest.Encoded()]
	if !ok {
		t.Fatalf("the archive has no blob %s", d.Digest)
	}
	if digest.FromBytes(data) != d.Digest || int64(len(data)) != d.Size {
		t.Fatalf("blob %s does not match its descriptor", d.Digest)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("blob %s (%s): %v", d.Digest, d.MediaType, err)
		}
	}
	return data
}

// layerFile is a regular file of an image layer.
type layerFile struct {
	mode    int64
	content []byte
}

// layerFiles reads the regular files of a layer (tar, or tar+gzip) by absolute path.
func layerFiles(t *testing.T, mediaType string, data []byte) map[string]layerFile {
	t.Helper()
	var r io.Reader = bytes.NewReader(data)
	switch mediaType {
	case ocispec.MediaTypeImageLayerGzip:
		gz, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = gz
	case ocispec.MediaTypeImageLayer:
	default:
		t.Fatalf("layer of media type %s", mediaType)
	}
	files := map[string]layerFile{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			content, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files["/"+strings.TrimPrefix(h.Name, "./")] = layerFile{mode: h.Mode, content: content}
		}
	}
}

// TestImage builds the image as an operator does (make image, with buildah and no container
// engine), reads the OCI archive it writes (index.json → manifest → config and layers), checks
// its user, entrypoint and labels, and runs the binary taken out of its layer: `kcleanup version`
// names the commit the labels name. The machine cannot run the container itself (no cgroups);
// the binary is static, so it runs as it would inside.
func TestImage(t *testing.T) {
	requireTool(t, "buildah", "buildah")
	root := repoRoot(t)
	dir := t.TempDir()
	archive := filepath.Join(dir, "kcleanup.oci.tar")
	make := exec.Command("make", "--no-print-directory", "image", "IMAGE="+archive)
	make.Dir, make.Env = root, cleanEnv()
	out, err := make.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	for _, push := range []string{"skopeo copy oci-archive:" + archive, "podman push"} {
		if !strings.Contains(string(out), push) {
			t.Errorf("make image does not say how to push the image (%s):\n%s", push, out)
		}
	}

	a := readOCIArchive(t, archive)
	var index ocispec.Index
	if err := json.Unmarshal(a["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d manifests, want 1", err, len(index.Manifests))
	}
	var manifest ocispec.Manifest
	a.blob(t, index.Manifests[0], &manifest)
	var image ocispec.Image
	a.blob(t, manifest.Config, &image)
	cfg := image.Config

	// The user: numeric and not root, the one deploy/image/passwd names and the Kubernetes
	// Deployment runs as.
	uid, gid, ok := strings.Cut(cfg.User, ":")
	if n, err := strconv.Atoi(uid); !ok || err != nil || n == 0 {
		t.Errorf("image user %q: want a numeric non-root uid:gid", cfg.User)
	}
	if _, err := strconv.Atoi(gid); err != nil {
		t.Errorf("image user %q: want a numeric gid", cfg.User)
	}
	if got := deploymentUser(t, root); got != cfg.User {
		t.Errorf("deploy/kubernetes/deployment.yaml runs as %s; the image's user is %s", got, cfg.User)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/kcleanup"}) || len(cfg.Cmd) != 0 {
		t.Errorf("entrypoint %q, cmd %q: want [/kcleanup] and no cmd", cfg.Entrypoint, cfg.Cmd)
	}
	labels := cfg.Labels
	revision, version := labels[ocispec.AnnotationRevision], labels[ocispec.AnnotationVersion]
	if revision == "" || version == "" || labels[ocispec.AnnotationSource] == "" || labels[ocispec.AnnotationTitle] != "kcleanup" {
		t.Errorf("labels %v: want %s, %s, %s and %s=kcleanup", labels, ocispec.AnnotationRevision, ocispec.AnnotationVersion, ocispec.AnnotationSource, ocispec.AnnotationTitle)
	}
	if head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil && strings.TrimSpace(string(head)) != revision {
		t.Errorf("label %s=%s; the checkout is at %s", ocispec.AnnotationRevision, revision, head)
	}

	// The root filesystem: FROM scratch, so the layers hold exactly what make image copied.
	files := map[string]layerFile{}
	for _, l := range manifest.Layers {
		for name, h := range layerFiles(t, l.MediaType, a.blob(t, l, nil)) {
			files[name] = h
		}
	}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"/etc/group", "/etc/passwd", "/etc/ssl/certs/ca-certificates.crt", "/kcleanup"}
	if !slices.Equal(names, want) {
		t.Errorf("the image holds %q, want %q", names, want)
	}
	content := func(name string) string { return string(files[name].content) }
	if !strings.Contains(content("/etc/passwd"), ":"+uid+":"+gid+":") {
		t.Errorf("/etc/passwd has no entry for %s: %q", cfg.User, content("/etc/passwd"))
	}
	if !strings.Contains(content("/etc/ssl/certs/ca-certificates.crt"), "-----BEGIN CERTIFICATE-----") {
		t.Error("/etc/ssl/certs/ca-certificates.crt holds no certificate")
	}
	if files["/kcleanup"].mode&0o111 == 0 {
		t.Fatal("/kcleanup is missing or not executable")
	}

	bin := filepath.Join(dir, "kcleanup")
	if err := os.WriteFile(bin, []byte(content("/kcleanup")), 0o755); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(bin, "version", "-o", "json")
	run.Env = []string{} // nothing from this machine: as in the image, which sets no variable
	vout, err := run.Output()
	if err != nil {
		t.Fatalf("the image's kcleanup version: %v\n%s", err, vout)
	}
	var v struct{ Version, Commit string }
	if err := json.Unmarshal(vout, &v); err != nil {
		t.Fatalf("kcleanup version -o json: %v\n%s", err, vout)
	}
	if v.Commit != revision || v.Version != version {
		t.Errorf("the image's binary says version %s commit %s; its labels say %s and %s", v.Version, v.Commit, version, revision)
	}
}

// deploymentUser is the uid:gid the Kubernetes Deployment runs its pods as.
func deploymentUser(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "deploy/kubernetes/deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					SecurityContext struct {
						RunAsUser  int `yaml:"runAsUser"`
						RunAsGroup int `yaml:"runAsGroup"`
					} `yaml:"securityContext"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	sc := d.Spec.Template.Spec.SecurityContext
	return strconv.Itoa(sc.RunAsUser) + ":" + strconv.Itoa(sc.RunAsGroup)
}
