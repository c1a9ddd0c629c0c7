// Command waitkafka waits until a Kafka broker answers a Metadata request that lists at
// least one broker, which is when it can serve clients. cmd/kafkadev/kafka.sh uses it after
// starting the development broker and to check that a running one still answers.
//
//	waitkafka [-timeout 120s] [-pid N] [-brokers N] host:port
//
// With -brokers it waits until the metadata lists that many brokers (a cluster whose nodes
// have all registered). It exits 0 once the broker answers, 1 when the timeout passes or the process -pid exits
// first (a broker that crashed on startup will never answer: no point waiting).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	timeout := flag.Duration("timeout", 120*time.Second, "give up after this long")
	pid := flag.Int("pid", 0, "stop waiting if this process exits (0: do not watch)")
	brokers := flag.Int("brokers", 1, "wait until the metadata lists at least this many brokers")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: waitkafka [-timeout 120s] [-pid N] [-brokers N] host:port")
		os.Exit(2)
	}
	if err := wait(flag.Arg(0), *timeout, *pid, *brokers); err != nil {
		fmt.Fprintln(os.Stderr, "waitkafka:", err)
		os.Exit(1)
	}
}

func wait(addr string, timeout time.Duration, pid, brokers int) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		if pid > 0 && !alive(pid) {
			return fmt.Errorf("process %d exited before %s answered", pid, addr)
		}
		if last = ping(ctx, addr, brokers); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer within %s: %v", addr, timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// ping sends one Metadata request on a fresh connection.
func ping(ctx context.Context, addr string, brokers int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // no topics: just the cluster
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Brokers) < brokers {
		return fmt.Errorf("metadata lists %d of %d brokers yet", len(resp.Brokers), brokers)
	}
	return nil
}

// alive reports whether pid exists (signal 0 checks without sending anything) and, where
// /proc tells, is not a zombie that its parent has yet to reap.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil || p.Signal(syscall.Signal(0)) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')') // the command name may contain anything
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
