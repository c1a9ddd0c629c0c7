// Package s3test gives tests the real S3-compatible server that cmd/s3dev/s3.sh starts (make
// test does): its endpoint and credentials, an AWS chain pointed at it alone, and buckets of
// their own.
package s3test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kcleanup/kcleanup/internal/repo"
)

// Server is the S3-compatible server of KCLEANUP_TEST_S3.
type Server struct{ Endpoint, Key, Secret string }

// Need returns the server of KCLEANUP_TEST_S3, skipping without one (failing under CI=true,
// where make test starts it), and points the AWS chain of this test (and of the processes it
// starts) at it alone: no profile, no shared files, no instance metadata of the machine.
func Need(t testing.TB) Server {
	t.Helper()
	srv := Server{os.Getenv("KCLEANUP_TEST_S3"), os.Getenv("KCLEANUP_TEST_S3_ACCESS_KEY_ID"), os.Getenv("KCLEANUP_TEST_S3_SECRET_ACCESS_KEY")}
	if srv.Endpoint == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("KCLEANUP_TEST_S3 is not set: run the tests through cmd/s3dev/s3.sh test (make test does)")
		}
		t.Skip("no S3 server (KCLEANUP_TEST_S3): run " + command(t))
	}
	Isolate(t)
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.Key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.Secret)
	return srv
}

// command is the command line that runs t with the server: from the repository's root,
// cmd/s3dev/s3.sh test go test -run '^T$' ./PKG.
func command(t testing.TB) string {
	pkg := "./..."
	if root, err := repo.Root(); err == nil {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(root, wd); err == nil {
				pkg = "./" + filepath.ToSlash(rel)
			}
		}
	}
	return fmt.Sprintf("cmd/s3dev/s3.sh test go test -count=1 -run '^%s$' %s (from the repository's root)", strings.SplitN(t.Name(), "/", 2)[0], pkg)
}

// Isolate empties the AWS chain: every variable the SDK reads unset, shared files that do not
// exist, no instance metadata, region us-east-1.
func Isolate(t testing.TB) {
	t.Helper()
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_DEFAULT_REGION"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "us-east-1")
}

// Client is an S3 client of the server (path-style, as S3-compatible servers expect), built
// from the server's values alone, not from the chain under test.
func (s Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s.Key, SecretAccessKey: s.Secret}, nil
		}),
		// S3Proxy checks no whole-object checksums; send and verify them only where required.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// NewBucket creates a bucket of the test's own, named after it.
func (s Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := strings.NewReplacer("/", "-", "_", "-").Replace(strings.ToLower(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	bucket := fmt.Sprintf("kc-%s-%d", strings.Trim(name, "-"), rand.Uint32())
	if _, err := s.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatalf("create bucket %s at %s: %v", bucket, s.Endpoint, err)
	}
	return bucket
}
