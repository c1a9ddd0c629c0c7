package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/internal/s3test"
)

// s3Server is the real S3-compatible server that cmd/s3dev/s3.sh starts (make test does):
// its endpoint and credentials.
type s3Server struct{ endpoint, key, secret string }

// needS3 returns the server of KCLEANUP_TEST_S3 (internal/s3test: skipping without one, failing
// under CI=true) with the AWS chain of this test pointed at it alone.
func needS3(t *testing.T) s3Server {
	t.Helper()
	srv := s3test.Need(t)
	return s3Server{srv.Endpoint, srv.Key, srv.Secret}
}

// isolateAWS empties the chain: every variable the SDK reads, files that do not exist.
func isolateAWS(t *testing.T) { s3test.Isolate(t) }

// newBucket creates a bucket of its own for the test and puts objects (key → content).
func newBucket(t *testing.T, objects map[string][]byte) string {
	t.Helper()
	ctx := context.Background()
	c, _, err := newS3Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bucket := fmt.Sprintf("kc-%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), mrand.Uint32())
	bucket = strings.ReplaceAll(bucket, "_", "-")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	for k, v := range objects {
		put(t, c, bucket, k, v)
	}
	return bucket
}

func put(t *testing.T, c *s3.Client, bucket, key string, v []byte) {
	t.Helper()
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(v)}); err != nil {
		t.Fatalf("put s3://%s/%s: %v", bucket, key, err)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func TestS3Open(t *testing.T) {
	needS3(t)
	big := randomBytes(3*blockSize + 12345)
	bucket := newBucket(t, map[string][]byte{
		"jobs/j1/chk-7/_metadata":  []byte("METADATA-BYTES"),
		"jobs/j1/chk-7/3f2a-state": []byte("0123456789"),
		"jobs/j1/chk-7/big":        big,
		"jobs/j1/shared/sst-1":     []byte("SHARED"),
		"sp-1/_metadata":           []byte("SAVEPOINT"),
		"_metadata":                []byte("AT-THE-ROOT"),
	})
	ctx := context.Background()
	chk := "s3://" + bucket + "/jobs/j1/chk-7"
	for _, p := range []string{chk, chk + "/", chk + "/_metadata", "s3a://" + bucket + "/jobs/j1/chk-7", "s3p://" + bucket + "/jobs/j1/chk-7/_metadata", "S3://" + bucket + "/jobs/j1/chk-7"} {
		st, loc, err := Open(ctx, p, Options{})
		if err != nil {
			t.Fatalf("Open(%q): %v", p, err)
		}
		if want := (Ref{Scheme: "s3", Bucket: bucket, Path: "jobs/j1/chk-7/_metadata"}); loc.Metadata != want || loc.Dir.Path != "jobs/j1/chk-7" {
			t.Errorf("Open(%q) located %+v, want %s", p, loc, want)
		}
		for name, want := range map[string]string{
			"_metadata":         "METADATA-BYTES",
			"3f2a-state":        "0123456789",
			chk + "/3f2a-state": "0123456789",
			"s3a://" + bucket + "/jobs/j1/chk-7/3f2a-state": "0123456789",
			"s3://" + bucket + "/jobs/j1/shared/sst-1":      "SHARED", // absolute, outside the directory, same bucket
		} {
			if got := openRead(t, st, name); got != want {
				t.Errorf("Open(%q).Open(%q) reads %q, want %q", p, name, got, want)
			}
		}
	}
	for p, want := range map[string]string{"s3://" + bucket + "/sp-1": "SAVEPOINT", "s3://" + bucket: "AT-THE-ROOT", "s3://" + bucket + "/": "AT-THE-ROOT"} {
		st, _, err := Open(ctx, p, Options{})
		if err != nil {
			t.Fatalf("Open(%q): %v", p, err)
		}
		if got := openRead(t, st, MetadataName); got != want {
			t.Errorf("Open(%q): _metadata reads %q, want %q", p, got, want)
		}
	}

	// Ranged reads of a 3 MiB+ object: random small reads, reads across blocks, a large read
	// and the end, each equal to the bytes put.
	st, _, err := Open(ctx, chk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := st.Open(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Size() != int64(len(big)) {
		t.Fatalf("Size %d, want %d", f.Size(), len(big))
	}
	check := func(off int64, n int) {
		t.Helper()
		buf := make([]byte, n)
		got, err := f.ReadAt(buf, off)
		wantN := min(n, len(big)-int(off))
		if got != wantN || (wantN < n) != (err == io.EOF) || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d", n, off, got, err, wantN)
		}
		if !bytes.Equal(buf[:got], big[off:off+int64(got)]) {
			t.Fatalf("ReadAt(%d bytes at %d) read other bytes than were put", n, off)
		}
	}
	for range 50 {
		check(mrand.Int64N(int64(len(big))), 1+mrand.IntN(4096))
	}
	check(blockSize-10, 20)
	// ReadAt is safe for parallel use, as io.ReaderAt promises.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				off, n := mrand.Int64N(int64(len(big))), 1+mrand.IntN(8192)
				buf := make([]byte, n)
				got, _ := f.ReadAt(buf, off)
				if !bytes.Equal(buf[:got], big[off:off+int64(got)]) {
					t.Errorf("a parallel ReadAt(%d bytes at %d) read other bytes than were put", n, off)
				}
			}
		})
	}
	wg.Wait()
	check(100, 2*blockSize+7)
	check(int64(len(big))-5, 10)
	check(0, len(big))
}

// countingTransport counts the response bytes that reach the client.
type countingTransport struct{ bytes atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, &c.bytes}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestS3ReadsRanges: reading a few bytes of an 8 MiB object fetches one block, not the object.
func TestS3ReadsRanges(t *testing.T) {
	needS3(t)
	bucket := newBucket(t, map[string][]byte{"chk-1/_metadata": randomBytes(8 << 20)})
	counter := &countingTransport{}
	testTransport = counter
	t.Cleanup(func() { testTransport = nil })
	ctx := context.Background()
	st, _, err := Open(ctx, "s3://"+bucket+"/chk-1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := st.Open(ctx, MetadataName)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	for _, off := range []int64{0, 1000, 5 << 20} {
		if _, err := f.ReadAt(buf, off); err != nil {
			t.Fatal(err)
		}
	}
	if got := counter.bytes.Load(); got > 2*blockSize+64<<10 {
		t.Errorf("three small reads of an 8 MiB object fetched %d bytes: want two blocks (%d bytes) at most", got, 2*blockSize)
	}
}

func TestS3Errors(t *testing.T) {
	srv := needS3(t)
	bucket := newBucket(t, map[string][]byte{"chk-1/_metadata": []byte("M"), "chk-1/state": []byte("S")})
	ctx := context.Background()
	for _, tc := range []struct {
		path, err string
		notFound  bool
	}{
		{"s3://" + bucket + "/chk-2", "no object s3://" + bucket + "/chk-2/_metadata and no object s3://" + bucket + "/chk-2", true},
		{"s3://" + bucket + "/chk-2/_metadata", "no object s3://" + bucket + "/chk-2/_metadata", true},
		{"s3://kcleanup-no-such-bucket-4711/chk-1", `bucket "kcleanup-no-such-bucket-4711" does not exist at ` + srv.endpoint, true},
	} {
		_, _, err := Open(ctx, tc.path, Options{})
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), tc.err) || errors.Is(err, ErrNotFound) != tc.notFound {
			t.Errorf("Open(%q): %v; want an error with %q (not found: %v)", tc.path, err, tc.err, tc.notFound)
		}
	}
	st, _, err := Open(ctx, "s3://"+bucket+"/chk-1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, err string }{
		{"missing-state", "checkpoint file s3://" + bucket + "/chk-1/missing-state does not exist"},
		{"s3://other-bucket/chk-1/state", "not on the store that holds its _metadata (s3://" + bucket + ")"},
		{"file:/tmp/chk-1/state", "not on the store that holds its _metadata"},
		{"/etc/passwd", "not on the store that holds its _metadata"},
		{"../chk-1/state", "leaves its directory"},
		{"s3://" + bucket + "/chk-1/../chk-1/state", `".." segment`},
	} {
		_, err := st.Open(ctx, tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Open(%q): %v; want an error with %q", tc.name, err, tc.err)
		}
	}

	t.Run("wrong secret", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
		_, _, err := Open(ctx, "s3://"+bucket+"/chk-1", Options{})
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") {
			t.Errorf("a wrong secret: %v; want a refusal that names what to set", err)
		}
	})
	t.Run("unknown key", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "nobody")
		_, _, err := Open(ctx, "s3://"+bucket+"/chk-1", Options{})
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "AWS_PROFILE") {
			t.Errorf("an unknown access key: %v; want a refusal that names what to set", err)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		os.Unsetenv("AWS_ACCESS_KEY_ID")
		os.Unsetenv("AWS_SECRET_ACCESS_KEY")
		_, _, err := Open(ctx, "s3://"+bucket+"/chk-1", Options{})
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), "no AWS credentials found") || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
			t.Errorf("no credentials: %v; want one that names what to set", err)
		}
	})
}

// TestS3Chain: the endpoint and credentials also come from AWS_ENDPOINT_URL_S3 and from a
// profile of the shared files (AWS_PROFILE).
func TestS3Chain(t *testing.T) {
	srv := needS3(t)
	bucket := newBucket(t, map[string][]byte{"chk-1/_metadata": []byte("M")})
	ctx := context.Background()
	t.Run("AWS_ENDPOINT_URL_S3", func(t *testing.T) {
		os.Unsetenv("AWS_ENDPOINT_URL")
		t.Setenv("AWS_ENDPOINT_URL_S3", srv.endpoint)
		if _, _, err := Open(ctx, "s3://"+bucket+"/chk-1", Options{}); err != nil {
			t.Error(err)
		}
	})
	t.Run("AWS_PROFILE", func(t *testing.T) {
		isolateAWS(t)
		dir := t.TempDir()
		mustWrite(t, filepath.Join(dir, "config"), fmt.Sprintf("[profile dev]\nregion = eu-west-1\nendpoint_url = %s\n", srv.endpoint))
		mustWrite(t, filepath.Join(dir, "credentials"), fmt.Sprintf("[dev]\naws_access_key_id = %s\naws_secret_access_key = %s\n", srv.key, srv.secret))
		t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
		t.Setenv("AWS_PROFILE", "dev")
		if _, _, err := Open(ctx, "s3://"+bucket+"/chk-1", Options{}); err != nil {
			t.Error(err)
		}
	})
}

// TestS3Confined: a confined Open refuses a bucket or prefix outside the roots before it
// sends any request, and refuses files the checkpoint names outside them.
func TestS3Confined(t *testing.T) {
	needS3(t)
	bucket := newBucket(t, map[string][]byte{"allowed/chk-1/_metadata": []byte("M"), "other/chk-1/_metadata": []byte("O")})
	ctx := context.Background()
	opts := Options{Confined: true, Roots: mustRoots(t, "s3://"+bucket+"/allowed")}
	st, _, err := Open(ctx, "s3a://"+bucket+"/allowed/chk-1", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Open(ctx, "s3://"+bucket+"/other/chk-1/_metadata"); !errors.Is(err, ErrOutsideRoots) {
		t.Errorf("a file outside the root: %v; want ErrOutsideRoots", err)
	}
	counter := &countingTransport{}
	testTransport = counter
	t.Cleanup(func() { testTransport = nil })
	for _, p := range []string{"s3://" + bucket + "/other/chk-1", "s3://" + bucket + "-evil/allowed/chk-1", "s3://" + bucket + "/allowedx/chk-1"} {
		if _, _, err := Open(ctx, p, opts); !errors.Is(err, ErrOutsideRoots) {
			t.Errorf("Open(%q): %v; want ErrOutsideRoots", p, err)
		}
	}
	if counter.bytes.Load() != 0 {
		t.Errorf("refused paths read %d bytes from the server: want no request", counter.bytes.Load())
	}
}

// TestS3ObjectReplaced: an object replaced between two reads is an error, never a mix.
func TestS3ObjectReplaced(t *testing.T) {
	needS3(t)
	first := randomBytes(2 * blockSize)
	bucket := newBucket(t, map[string][]byte{"chk-1/_metadata": first})
	ctx := context.Background()
	st, _, err := Open(ctx, "s3://"+bucket+"/chk-1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := st.Open(ctx, MetadataName)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := f.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	c, _, _ := newS3Client(ctx)
	put(t, c, bucket, "chk-1/_metadata", randomBytes(2*blockSize))
	if _, err := f.ReadAt(buf, blockSize+5); err == nil || !strings.Contains(err.Error(), "changed while kcleanup read it") {
		t.Errorf("a read after the object was replaced: %v; want an error naming the change", err)
	}
}

// BenchmarkS3SequentialRead: a 16 MiB _metadata read front to back in 4 KiB ReadAt calls,
// as a reader walks it, through the block cache (16 ranged GETs).
func BenchmarkS3SequentialRead(b *testing.B) {
	if os.Getenv("KCLEANUP_TEST_S3") == "" {
		b.Skip("no S3 server: run through cmd/s3dev/s3.sh test")
	}
	srv := s3Server{os.Getenv("KCLEANUP_TEST_S3"), os.Getenv("KCLEANUP_TEST_S3_ACCESS_KEY_ID"), os.Getenv("KCLEANUP_TEST_S3_SECRET_ACCESS_KEY")}
	b.Setenv("AWS_ENDPOINT_URL", srv.endpoint)
	b.Setenv("AWS_ACCESS_KEY_ID", srv.key)
	b.Setenv("AWS_SECRET_ACCESS_KEY", srv.secret)
	b.Setenv("AWS_REGION", "us-east-1")
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx := context.Background()
	c, _, err := newS3Client(ctx)
	if err != nil {
		b.Fatal(err)
	}
	bucket := fmt.Sprintf("kc-bench-%d", mrand.Uint32())
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		b.Fatal(err)
	}
	key := "chk-1/_metadata"
	data := randomBytes(16 << 20)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	buf := make([]byte, 4096)
	for b.Loop() {
		st, _, err := Open(ctx, "s3://"+bucket+"/chk-1", Options{})
		if err != nil {
			b.Fatal(err)
		}
		f, err := st.Open(ctx, MetadataName)
		if err != nil {
			b.Fatal(err)
		}
		for off := int64(0); off < f.Size(); off += int64(len(buf)) {
			if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
				b.Fatal(err)
			}
		}
		f.Close()
	}
}
