package main

// Issue 32 item 4 on the S3 server: the Flink job in the loop checkpoints to s3:// on the real
// S3-compatible server (S3Proxy, cmd/s3dev/s3.sh) through Flink's own S3 filesystem, and a
// worker follows a retention policy watching that location.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/cockroachdb/errors"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/internal/s3test"
	"github.com/kcleanup/kcleanup/protocol"
)

// TestFlinkJobCheckpointingToS3 proves, against a real Flink job writing its checkpoints to the
// real S3 server and the real broker, that the owner following a policy that watches
// s3://BUCKET/checkpoints raises the log starts as Flink subsumes checkpoints on S3, and that at
// every sample no log start is above what a checkpoint then on S3 needs.
func TestFlinkJobCheckpointingToS3(t *testing.T) {
	srv := s3test.Need(t) // the AWS chain of this test, the job and the worker: that server alone
	e := opTestEnv(t)
	topic := kafkatest.NewTopic(t, e.cl, "flinkjob-s3", flinkJobPartitions, opGoodDataConfigs())
	t.Cleanup(func() { e.deleteTopic(t, protocol.ControlTopicFor(topic)) })
	e.initControlTopic(t, topic)
	bucket := srv.NewBucket(t)
	chk := "s3://" + bucket + "/checkpoints"
	s := &flinkSampler{e: e, topic: topic, at: s3Points{srv.Client(), bucket, "checkpoints/"}, root: "s3://" + bucket}

	job := startFlinkJob(t, e, topic, chk, "--s3-endpoint", srv.Endpoint)
	job.expect(t, "running ", 3*time.Minute) // the first run may build the job with Maven
	if code, out, errOut := e.run(t, "retention", "set", "--topic", topic, "--watch", chk,
		"--every", "1s", "--reason", "flink job on S3 in the loop"); code != 0 {
		t.Fatalf("retention set: exit %d\n%s%s", code, out, errOut)
	}
	startFollowingWorker(t, e, protocol.ControlTopicFor(topic), "s3://"+bucket)

	// Twice: the newest checkpoint now, which Flink subsumes within seconds (three retained, one a
	// second); the log starts must rise above it, and it must be gone from S3 by then.
	for round := 1; round <= 2; round++ {
		began := time.Now()
		points := s.points(t)
		if len(points) == 0 {
			t.Fatalf("the job runs but no checkpoint is listed under %s", chk)
		}
		newest := points[len(points)-1]
		need := s.minimum(t, newest)
		s.until(t, 90*time.Second, "the log starts rise above checkpoint "+newest, func(starts events.Offsets) bool {
			return allAbove(starts, need)
		})
		if s.at.has(t, newest) {
			t.Errorf("%s is still on S3 with the log starts %v above its minimum %v", newest, s.last, need)
		}
		t.Logf("round %d: the log starts %v passed %v of subsumed %s after %v", round, s.last, need, newest, time.Since(began).Round(100*time.Millisecond))
	}
	job.command(t, "stop", "stopped")
	t.Logf("%d samples; retained at the end: %v", s.samples, s.points(t))
}

// s3Points lists the checkpoints under a prefix of a bucket: PREFIX/JOB/chk-N/_metadata.
type s3Points struct {
	c      *s3.Client
	bucket string
	prefix string
}

func (p s3Points) list(t *testing.T) []string {
	t.Helper()
	var out []string
	pages := s3.NewListObjectsV2Paginator(p.c, &s3.ListObjectsV2Input{Bucket: &p.bucket, Prefix: &p.prefix})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list s3://%s/%s: %v", p.bucket, p.prefix, err)
		}
		for _, o := range page.Contents {
			parts := strings.Split(strings.TrimPrefix(*o.Key, p.prefix), "/")
			if len(parts) == 3 && strings.HasPrefix(parts[1], "chk-") && parts[2] == "_metadata" {
				out = append(out, "s3://"+p.bucket+"/"+strings.TrimSuffix(*o.Key, "/_metadata"))
			}
		}
	}
	return out
}

func (p s3Points) has(t *testing.T, point string) bool {
	t.Helper()
	key := strings.TrimPrefix(point, "s3://"+p.bucket+"/") + "/_metadata"
	_, err := p.c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &p.bucket, Key: &key})
	if err == nil {
		return true
	}
	if nf := (*types.NotFound)(nil); errors.As(err, &nf) {
		return false
	}
	t.Fatalf("head s3://%s/%s: %v", p.bucket, key, err)
	return false
}
