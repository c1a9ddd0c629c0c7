package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
)

// measured is one process run: how long it took from start to exit, as the
// operator waiting for it sees it, and its peak resident memory.
type measured struct {
	Wall     time.Duration
	MaxRSSMB float64
	Stdout   []byte
	Stderr   []byte
}

// gnuTime is GNU time, which reports a child's peak RSS truthfully. The
// rusage that Go's os/exec returns does not: Go starts children with vfork,
// and Linux counts the parent's resident set, shared until exec, into the
// child's peak (a child of a 300 MB parent "peaks" at 300 MB).
const gnuTime = "/usr/bin/time"

// run starts a process, waits for it and measures it. A non-zero exit is an
// error that quotes the end of its output.
func run(ctx context.Context, env []string, name string, args ...string) (measured, error) {
	var m measured
	rssFile := ""
	if _, err := os.Stat(gnuTime); err == nil {
		if f, err := os.CreateTemp("", "kcbench-rss-"); err == nil {
			rssFile = f.Name()
			f.Close()
			defer os.Remove(rssFile)
			args = append([]string{"-f", "%M", "-o", rssFile, name}, args...)
			name = gnuTime
		}
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	m.Wall = time.Since(began)
	m.Stdout, m.Stderr = stdout.Bytes(), stderr.Bytes()
	m.MaxRSSMB = peakRSS(rssFile, cmd.ProcessState)
	if err != nil {
		return m, errors.Wrapf(err, "%s %s\nstderr: %s\nstdout: %s", filepath.Base(name),
			strings.Join(args, " "), tail(m.Stderr, 1500), tail(m.Stdout, 500))
	}
	return m, nil
}

// peakRSS reads the peak RSS GNU time wrote (KiB), or else takes the
// process's rusage, which overstates it (see gnuTime).
func peakRSS(rssFile string, ps *os.ProcessState) float64 {
	if rssFile != "" {
		if data, err := os.ReadFile(rssFile); err == nil {
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if kb, err := strconv.ParseFloat(strings.TrimSpace(lines[len(lines)-1]), 64); err == nil {
				return kb / 1024
			}
		}
	}
	if ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			return float64(ru.Maxrss) / 1024 // Linux reports KiB
		}
	}
	return 0
}

// tail is the last n bytes of b, as text.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// childResult is what a kcbench child prints as its last stdout line: the
// seconds its measured section took and figures particular to it.
type childResult map[string]float64

// runChild runs this program in child mode (see child.go) and decodes its
// result. Measuring in a child keeps every subject in a process of its own:
// its peak memory is its own, and it starts cold like an operator's command.
func runChild(ctx context.Context, args ...string) (measured, childResult, error) {
	self, err := os.Executable()
	if err != nil {
		return measured{}, nil, errors.Wrap(err, "find kcbench's own executable")
	}
	m, err := run(ctx, nil, self, append([]string{"child"}, args...)...)
	if err != nil {
		return m, nil, err
	}
	res, err := lastJSONLine(m.Stdout)
	return m, res, err
}

func lastJSONLine(out []byte) (childResult, error) {
	var last string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "{") {
			last = line
		}
	}
	var res childResult
	if err := json.Unmarshal([]byte(last), &res); err != nil {
		return nil, errors.Wrapf(err, "child result %q", tail([]byte(last), 200))
	}
	return res, nil
}

// printChild writes a child's result line.
func printChild(res childResult) error {
	data, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(data, '\n'))
	return err
}

// heapAfterGC is the live heap in MB once the garbage collector ran.
func heapAfterGC() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// selfMaxRSSMB is this process's peak resident memory so far.
func selfMaxRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}

// readFirstLine returns the first line of a file that starts with prefix,
// without the prefix; "" when there is none.
func readFirstLine(path, prefix string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(strings.TrimPrefix(line, prefix))
		}
	}
	return ""
}

// machine describes this machine from /proc and the Go runtime.
func machine(kafkaVersion, broker string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Kafka: kafkaVersion, Broker: broker}
	m.CPUModel = strings.TrimPrefix(readFirstLine("/proc/cpuinfo", "model name"), ": ")
	if kb := strings.TrimSuffix(readFirstLine("/proc/meminfo", "MemTotal:"), " kB"); kb != "" {
		if n, err := strconv.ParseInt(strings.TrimSpace(kb), 10, 64); err == nil {
			m.MemoryMB = n / 1024
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}
