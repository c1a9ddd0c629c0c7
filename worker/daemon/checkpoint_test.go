package daemon

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcleanup/kcleanup/checkpoint/store"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/internal/flinkgentest"
	"github.com/kcleanup/kcleanup/worker/httpauth"
)

// POST /v1/validate with {"checkpoint": PATH} makes the worker read files with its own
// credentials: only for an authenticated caller, only under --checkpoint-root, every file the
// checkpoint names included. The checkpoints are real (internal/flinkgen).

func checkpointBody(t *testing.T, path, uid string) string {
	t.Helper()
	b, err := json.Marshal(checkpointRequest{Checkpoint: path, OperatorUID: uid})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func realCheckpoint(t *testing.T) (dir, uid string) {
	t.Helper()
	for _, c := range flinkgentest.Cases(t) {
		if len(c.Operators) == 1 && len(c.Operators[0].Markers) > 0 && c.Operators[0].Markers[0].Validate() == nil {
			return c.Path, c.Operators[0].UID
		}
	}
	t.Fatal("no plannable case in the generator's output")
	return "", ""
}

func TestValidateACheckpointNeedsACallerAndARoot(t *testing.T) {
	path, uid := realCheckpoint(t)
	// A copy under a root of the test's own, and a link from inside the root to outside it.
	root := t.TempDir()
	inside := filepath.Join(root, "chk-1")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(path)
	for _, e := range entries {
		if !e.IsDir() {
			b, _ := os.ReadFile(filepath.Join(path, e.Name()))
			_ = os.WriteFile(filepath.Join(inside, e.Name()), b, 0o644)
		}
	}
	if err := os.Symlink(path, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	roots, err := store.ParseRoots([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	tokens := writeFile(t, t.TempDir(), "tokens.csv", aliceToken+",alice\n")
	bearer := []string{"Authorization", "Bearer " + aliceToken}

	t.Run("no authentication configured", func(t *testing.T) {
		f := newAppliedFixture(t, WithCheckpointRoots(roots))
		if a := send(t, http.DefaultClient, "POST", f.validate, checkpointBody(t, inside, uid)); a.code != 403 {
			t.Fatalf("want 403, got %d %s", a.code, a.body)
		}
	})
	f := newAppliedFixture(t, WithHTTPAuth(authed(t, httpauth.Config{TokenFile: tokens})), WithCheckpointRoots(roots))
	verdict := func(t *testing.T, a answer) gate.Verdict {
		t.Helper()
		var v gate.Verdict
		a.decode(t, &v)
		return v
	}
	if a := send(t, http.DefaultClient, "POST", f.validate, checkpointBody(t, inside, uid)); a.code != 401 {
		t.Fatalf("no token: want 401, got %d %s", a.code, a.body)
	}
	for name, p := range map[string]string{
		"outside the root":      path,
		"through a link":        filepath.Join(root, "escape"),
		"dot-dot out":           root + "/../" + filepath.Base(root) + "-not/chk-1",
		"a sibling's prefix":    root + "-evil/chk-1",
		"another store":         "s3://some-bucket/chk-1",
		"the root's parent dir": filepath.Dir(root),
	} {
		a := send(t, http.DefaultClient, "POST", f.validate, checkpointBody(t, p, uid), bearer...)
		if v := verdict(t, a); a.code != 403 || v.Reason != gate.CheckpointForbidden || v.Allowed {
			t.Errorf("%s (%s): want 403 checkpoint-forbidden, got %d %s", name, p, a.code, a.body)
		}
	}
	// Inside the root, read: the checkpoint's markers reach the gate, which judges them
	// against this worker's control topic (another topic: not allowed).
	a := send(t, http.DefaultClient, "POST", f.validate, checkpointBody(t, inside, uid), bearer...)
	if v := verdict(t, a); v.Allowed || v.Reason == gate.CheckpointForbidden || v.Reason == gate.CheckpointUnreadable || v.Reason == gate.BadRequest {
		t.Fatalf("inside the root: the gate should have judged the markers: %d %s", a.code, a.body)
	}
	// A damaged copy inside the root: cannot tell.
	meta := filepath.Join(inside, "_metadata")
	b, _ := os.ReadFile(meta)
	_ = os.WriteFile(meta, b[:len(b)/3], 0o644)
	a = send(t, http.DefaultClient, "POST", f.validate, checkpointBody(t, inside, uid), bearer...)
	if v := verdict(t, a); a.code != 503 || v.Reason != gate.CheckpointUnreadable || !strings.Contains(v.Message, "_metadata") {
		t.Fatalf("damaged: want 503 checkpoint-unreadable naming the file, got %d %s", a.code, a.body)
	}
	// Malformed requests are 400, a relative path too (the worker's directory means nothing).
	for _, body := range []string{`{"checkpoint":"chk-1"}`, `{"checkpoint":""}`, `{"checkpoint":"/x","extra":1}`, `{"checkpoint":"/x","operatorUid":"a","operatorUidHash":"b"}`} {
		if a := send(t, http.DefaultClient, "POST", f.validate, body, bearer...); a.code != 400 {
			t.Errorf("%s: want 400, got %d %s", body, a.code, a.body)
		}
	}
}

func TestValidateACheckpointWithoutRoots(t *testing.T) {
	path, uid := realCheckpoint(t)
	tokens := writeFile(t, t.TempDir(), "tokens.csv", aliceToken+",alice\n")
	f := newAppliedFixture(t, WithHTTPAuth(authed(t, httpauth.Config{TokenFile: tokens})))
	a := send(t, http.DefaultClient, "POST", f.validate, checkpointBody(t, path, uid), "Authorization", "Bearer "+aliceToken)
	if a.code != 403 || !strings.Contains(a.body, "--checkpoint-root") {
		t.Fatalf("want 403 naming --checkpoint-root, got %d %s", a.code, a.body)
	}
}
