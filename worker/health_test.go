package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/internal/workertest"
	"github.com/kcleanup/kcleanup/protocol"
)

func TestCheckBrokersOnFake(t *testing.T) {
	c, _ := workertest.FakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fs, err := c.CheckBrokers(ctx)
	if err != nil || len(fs) != 1 || fs[0].Severity != protocol.OK || !strings.Contains(fs[0].Message, "supports DeleteRecords") {
		t.Fatalf("findings %+v, %v", fs, err)
	}
}
