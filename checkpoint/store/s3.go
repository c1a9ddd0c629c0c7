package store

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/checkpoint"
)

// credentialsHelp says what to set when S3 has no credentials or refuses them.
const credentialsHelp = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), or AWS_PROFILE naming a profile of the shared config files, or run where a role is attached (web identity, ECS, EC2)"

// testTransport, when a test sets it, carries every request (to count what is fetched).
var testTransport http.RoundTripper

type s3Store struct {
	client   *s3.Client
	endpoint string // where requests go, for messages
	dir      Ref
	c        *confinement
}

// newS3Client builds a client from the standard AWS chain. Without a region anywhere it uses
// us-east-1 (any region works with an S3-compatible server; AWS answers a bucket of another
// region with a redirect, which the error names). An overridden endpoint is addressed
// path-style, as S3-compatible servers expect.
func newS3Client(ctx context.Context) (*s3.Client, string, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, "", errors.Newf("cannot load the AWS configuration: %v: check AWS_PROFILE, AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	endpoint := "AWS S3 (" + cfg.Region + ")"
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if o.BaseEndpoint != nil {
			o.UsePathStyle = true
			endpoint = *o.BaseEndpoint
		}
		// Ranges cannot be checked against a whole object's checksum: skip it quietly.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.DisableLogOutputChecksumValidationSkipped = true
		if testTransport != nil {
			o.HTTPClient = &http.Client{Transport: testTransport}
		}
	})
	return client, endpoint, nil
}

func openS3(ctx context.Context, ref Ref, c *confinement) (checkpoint.Store, Location, error) {
	// The roots are checked before any request: a refused bucket is never even asked.
	if err := c.check(ref, "checkpoint path"); err != nil {
		return nil, Location{}, err
	}
	client, endpoint, err := newS3Client(ctx)
	if err != nil {
		return nil, Location{}, err
	}
	s := &s3Store{client: client, endpoint: endpoint, c: c}
	candidates := []string{keyJoin(ref.Path, MetadataName)}
	if path.Base(ref.Path) == MetadataName {
		candidates = []string{ref.Path}
	} else if ref.Path != "" {
		candidates = append(candidates, ref.Path) // a _metadata file under another name
	}
	for _, key := range candidates {
		obj := Ref{Scheme: "s3", Bucket: ref.Bucket, Path: key}
		size, _, written, err := s.head(ctx, obj)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, Location{}, err
		}
		dir := path.Dir(key)
		if dir == "." {
			dir = ""
		}
		s.dir = Ref{Scheme: "s3", Bucket: ref.Bucket, Path: dir}
		return s, Location{Metadata: obj, Dir: s.dir, Written: written, Size: size}, nil
	}
	if err := s.bucketExists(ctx, ref.Bucket); err != nil {
		return nil, Location{}, err
	}
	what := "no object " + Ref{Scheme: "s3", Bucket: ref.Bucket, Path: candidates[0]}.String()
	if len(candidates) > 1 {
		what += " and no object " + ref.String()
	}
	return nil, Location{}, errors.Mark(errors.Newf("checkpoint path %s: %s at %s: expected a checkpoint directory (chk-N), a savepoint directory or its _metadata file", ref, what, s.endpoint), ErrNotFound)
}

func (s *s3Store) Open(ctx context.Context, name string) (checkpoint.File, error) {
	ref := Ref{Scheme: "s3", Bucket: s.dir.Bucket}
	if isAbsoluteName(name) {
		r, err := ParseRef(name, "")
		if err != nil {
			return nil, errors.Newf("the checkpoint names the file %q: %s", name, err.Error())
		}
		if r.Scheme != "s3" || r.Bucket != s.dir.Bucket {
			return nil, otherStore(name, s.dir)
		}
		ref = r
	} else {
		if err := relativeName(name); err != nil {
			return nil, err
		}
		ref.Path = keyJoin(s.dir.Path, name)
	}
	if err := s.c.check(ref, "checkpoint file"); err != nil {
		return nil, err
	}
	size, etag, _, err := s.head(ctx, ref)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, errors.Mark(errors.Newf("checkpoint file %s does not exist at %s (named %q by the checkpoint in %s)", ref, s.endpoint, name, s.dir), ErrNotFound)
		}
		return nil, err
	}
	return &s3File{s: s, ctx: ctx, ref: ref, size: size, etag: etag}, nil
}

// head returns an object's size, ETag and modification time; ErrNotFound when there is no
// such object.
func (s *s3Store) head(ctx context.Context, ref Ref) (int64, *string, time.Time, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &ref.Bucket, Key: &ref.Path})
	if err != nil {
		return 0, nil, time.Time{}, s.explain(err, ref)
	}
	if out.ContentLength == nil || *out.ContentLength < 0 {
		return 0, nil, time.Time{}, errors.Newf("%s at %s: the server did not say the object's size", ref, s.endpoint)
	}
	var written time.Time
	if out.LastModified != nil {
		written = *out.LastModified
	}
	return *out.ContentLength, out.ETag, written, nil
}

// bucketExists tells a missing bucket from a missing object (a HEAD of an object answers 404
// for both).
func (s *s3Store) bucketExists(ctx context.Context, bucket string) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket})
	if err == nil {
		return nil
	}
	if statusOf(err) == http.StatusNotFound {
		return errors.Mark(errors.Newf("bucket %q does not exist at %s: check the bucket's name (and AWS_ENDPOINT_URL for an S3-compatible server)", bucket, s.endpoint), ErrNotFound)
	}
	if statusOf(err) == http.StatusForbidden {
		return nil // no s3:ListBucket: the object's 404 stands
	}
	return s.explain(err, Ref{Scheme: "s3", Bucket: bucket})
}

func statusOf(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// explain words an error of the SDK for one object: what is missing or refused, and what to
// set.
func (s *s3Store) explain(err error, ref Ref) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errors.Wrapf(err, "reading %s", ref)
	}
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	switch status := statusOf(err); {
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound":
		if code == "NoSuchBucket" {
			return errors.Mark(errors.Newf("bucket %q does not exist at %s: check the bucket's name (and AWS_ENDPOINT_URL for an S3-compatible server)", ref.Bucket, s.endpoint), ErrNotFound)
		}
		return errors.Mark(errors.Newf("%s does not exist at %s", ref, s.endpoint), ErrNotFound)
	case code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "InvalidToken" || code == "ExpiredToken":
		return errors.Newf("S3 at %s refused the credentials reading %s (%s): %s", s.endpoint, ref, code, credentialsHelp)
	case status == http.StatusForbidden:
		return errors.Newf("S3 at %s refused to read %s (403 %s): the credentials are not valid there or lack s3:GetObject on it: %s", s.endpoint, ref, orStatus(code, status), credentialsHelp)
	case status == http.StatusMovedPermanently || code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed" && strings.Contains(err.Error(), "region"):
		return errors.Newf("bucket %q is in another region than %s: set AWS_REGION to the bucket's region", ref.Bucket, s.endpoint)
	case status == http.StatusPreconditionFailed:
		return errors.Newf("%s changed while kcleanup read it (its ETag no longer matches): read the checkpoint again once nothing writes it", ref)
	case status == 0 && isCredentialsError(err):
		return errors.Newf("no AWS credentials found to read %s: %s (%v)", ref, credentialsHelp, err)
	}
	return errors.Newf("reading %s at %s: %v", ref, s.endpoint, err)
}

func orStatus(code string, status int) string {
	if code != "" {
		return code
	}
	return http.StatusText(status)
}

// isCredentialsError tells the chain's failure to find any credentials, which the SDK
// returns as an error of signing with no type of its own.
func isCredentialsError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "get credentials") || strings.Contains(msg, "retrieve credentials") || strings.Contains(msg, "no EC2 IMDS role found")
}

// Reads by ranges: a small read fetches the block that holds it (kept: Flink's readers go
// forward in small steps), a read of a block or more fetches its own range.
const (
	blockSize    = 1 << 20
	cachedBlocks = 4
)

type s3File struct {
	s    *s3Store
	ctx  context.Context // Open's: ReadAt has none
	ref  Ref
	size int64
	etag *string

	mu     sync.Mutex
	blocks []block // most recently used last
}

type block struct {
	index int64
	data  []byte
}

func (f *s3File) Size() int64 { return f.size }
func (f *s3File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocks = nil
	return nil
}

func (f *s3File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.Newf("reading %s at offset %d: expected an offset of 0 or more", f.ref, off)
	}
	if off >= f.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := p
	if rest := f.size - off; int64(len(p)) > rest {
		want = p[:rest]
	}
	var err error
	if len(want) >= blockSize {
		err = f.fetch(off, want)
	} else {
		err = f.readBlocks(off, want)
	}
	if err != nil {
		return 0, err
	}
	if len(want) < len(p) {
		return len(want), io.EOF
	}
	return len(want), nil
}

func (f *s3File) readBlocks(off int64, dst []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(dst) > 0 {
		b, err := f.block(off / blockSize)
		if err != nil {
			return err
		}
		n := copy(dst, b[off%blockSize:])
		dst, off = dst[n:], off+int64(n)
	}
	return nil
}

// block returns block i, fetching it unless it is kept.
func (f *s3File) block(i int64) ([]byte, error) {
	for j, b := range f.blocks {
		if b.index == i {
			f.blocks = append(append(f.blocks[:j:j], f.blocks[j+1:]...), b)
			return b.data, nil
		}
	}
	start := i * blockSize
	data := make([]byte, min(blockSize, f.size-start))
	if err := f.fetch(start, data); err != nil {
		return nil, err
	}
	if len(f.blocks) == cachedBlocks {
		f.blocks = f.blocks[1:]
	}
	f.blocks = append(f.blocks, block{index: i, data: data})
	return data, nil
}

// fetch reads exactly len(dst) bytes at off with one ranged GET of the version headed.
func (f *s3File) fetch(off int64, dst []byte) error {
	rng := fmt.Sprintf("bytes=%d-%d", off, off+int64(len(dst))-1)
	out, err := f.s.client.GetObject(f.ctx, &s3.GetObjectInput{Bucket: &f.ref.Bucket, Key: &f.ref.Path, Range: &rng, IfMatch: f.etag})
	if err != nil {
		return f.s.explain(err, f.ref)
	}
	defer out.Body.Close()
	if _, err := io.ReadFull(out.Body, dst); err != nil {
		return errors.Newf("reading %s bytes %d to %d at %s: %v (the object is %d bytes)", f.ref, off, off+int64(len(dst))-1, f.s.endpoint, err, f.size)
	}
	return nil
}
