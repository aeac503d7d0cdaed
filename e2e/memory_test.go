package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil"
)

// The memory benchmarks measure the built `baton serve` from outside, so
// that its resident size is the server's alone: the client is this test
// process. They run only with -bench, once each:
//
//	go test ./e2e -run '^$' -bench Memory -benchtime 1x -timeout 30m
//
// BATON_BENCH_MESSAGES (default 1,000,000) sets the backlog,
// BATON_BENCH_RECEIVERS (default 10,000) the long polls held, and
// BATON_BENCH_SERVE_ARGS adds serve flags (space-separated), to compare
// settings without rebuilding.

// BenchmarkMemoryBacklog fills a queue of the durable default store with
// 1 KiB messages by SendMessageBatch from 64 connections, reads the
// server's resident size, stops it with SIGTERM and starts it again on the
// same data directory. It reports the resident size after the fill
// (rss-MiB) and its peak during it (peak-MiB), the growth per message over
// the empty server's (bytes/msg), the time from the restart's process start
// until /healthz answers and a ReceiveMessage returns a message
// (restart-s) with the CPU time the server used for it (restart-cpu-s: on
// a busy machine the wall time varies more), and the resident size then
// (restart-rss-MiB). sends/s and the server's CPU time per message sent
// (fill-cpu-us/msg) tell what the fill cost.
func BenchmarkMemoryBacklog(b *testing.B) {
	// A restart rebuilds the index of the whole backlog before it serves:
	// it took minutes for 10 million messages on the SQLite store of
	// earlier releases, on a busy machine.
	const backlogStart = 15 * time.Minute
	n := envInt(b, "BATON_BENCH_MESSAGES", 1_000_000)
	dir := b.TempDir()
	args := append([]string{"--account-id", account, "--data-dir", dir}, benchServeArgs()...)
	for b.Loop() {
		p := startBatonWithin(b, backlogStart, args...)
		c := benchClient(p.URL, 128)
		ctx := context.Background()
		q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("backlog")})
		if err != nil {
			b.Fatalf("create queue: %v", err)
		}
		empty := rssOf(b, p, "VmRSS")
		start := time.Now()
		fill(b, c, *q.QueueUrl, n)
		fillTime := time.Since(start)
		rss, peak, fillCPU := rssOf(b, p, "VmRSS"), rssOf(b, p, "VmHWM"), cpuOf(b, p)
		stopBaton(b, p)

		start = time.Now()
		p = startBatonWithin(b, backlogStart, args...)
		c = benchClient(p.URL, 4)
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(p.queueURL("backlog")), MaxNumberOfMessages: 1})
		restart := time.Since(start)
		if err != nil || len(out.Messages) != 1 {
			b.Fatalf("receive after restart: %v (%d messages)", err, len(out.Messages))
		}
		restartCPU, restartRSS := cpuOf(b, p), rssOf(b, p, "VmRSS")
		stopBaton(b, p)

		b.ReportMetric(float64(n)/fillTime.Seconds(), "sends/s")
		b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
		b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		b.ReportMetric(float64(rss-empty)/float64(n), "bytes/msg")
		b.ReportMetric(restart.Seconds(), "restart-s")
		b.ReportMetric(restartCPU.Seconds(), "restart-cpu-s")
		b.ReportMetric(float64(fillCPU.Microseconds())/float64(n), "fill-cpu-us/msg")
		b.ReportMetric(float64(restartRSS)/(1<<20), "restart-rss-MiB")
		b.ReportMetric(0, "ns/op")
	}
}

// BenchmarkMemoryLongPoll holds BATON_BENCH_RECEIVERS long polls (20 s,
// each on its own connection) on an empty queue and reports the server's
// resident size while they wait (rss-MiB) and its growth per waiting
// receiver (bytes/receiver). This process needs a file descriptor per
// receiver: raise `ulimit -n` above it.
func BenchmarkMemoryLongPoll(b *testing.B) {
	n := envInt(b, "BATON_BENCH_RECEIVERS", 10_000)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(n)+200 {
		b.Skipf("ulimit -n is %d; %d receivers need more", lim.Cur, n)
	}
	args := append([]string{"--account-id", account, "--max-long-polls-per-client", "-1"}, benchServeArgs()...)
	for b.Loop() {
		p := startBatonArgs(b, args...)
		c := benchClient(p.URL, n+10)
		ctx, cancel := context.WithCancel(context.Background())
		q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("longpoll")})
		if err != nil {
			b.Fatalf("create queue: %v", err)
		}
		base := goroutines(b, p)
		empty := rssOf(b, p, "VmRSS")
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range n {
			wg.Go(func() {
				_, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 20})
				if err != nil && ctx.Err() == nil {
					failed.Add(1)
				}
			})
		}
		// A waiting long poll holds at least one goroutine of the server's.
		testutil.CheckFor(b, 60*time.Second, func() error {
			if f := failed.Load(); f > 0 {
				return fmt.Errorf("%d receives failed", f)
			}
			if g := goroutines(b, p); g < base+n {
				return fmt.Errorf("server goroutines %d, want %d or more", g, base+n)
			}
			return nil
		})
		rss := rssOf(b, p, "VmRSS")
		cancel()
		wg.Wait()
		stopBaton(b, p)
		b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
		b.ReportMetric(float64(rss-empty)/float64(n), "bytes/receiver")
		b.ReportMetric(0, "ns/op")
	}
}

// fill sends n 1 KiB messages to url in batches of ten from 64 workers.
func fill(b *testing.B, c *sqs.Client, url string, n int) {
	body := strings.Repeat("m", 1024)
	fillWith(b, c, url, n, func() string { return body })
}

// fillWith sends n messages as fill does, with the bodies body returns
// (called from several goroutines).
func fillWith(b *testing.B, c *sqs.Client, url string, n int, body func() string) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			entries := make([]types.SendMessageBatchRequestEntry, 10)
			for i := range entries {
				entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i))}
			}
			for {
				from := next.Add(10) - 10
				if from >= int64(n) || b.Failed() {
					return
				}
				for i := range entries {
					entries[i].MessageBody = aws.String(body())
				}
				batch := entries[:min(10, int64(n)-from)]
				out, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: batch})
				if err != nil {
					b.Errorf("send batch: %v", err)
					return
				}
				if len(out.Failed) > 0 {
					b.Errorf("send batch: %d failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// benchClient is an SQS client for url keeping up to conns connections,
// without retries.
func benchClient(url string, conns int) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(url),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDBENCH", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient: sdkhttp.Client(&http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
			MaxIdleConns: conns, MaxIdleConnsPerHost: conns,
		}}),
	})
}

// stopBaton sends SIGTERM and waits for the process to exit.
func stopBaton(tb testing.TB, p *batonProcess) {
	tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		tb.Fatalf("baton did not exit 60s after SIGTERM")
	}
}

// rssOf reads a size field (VmRSS, VmHWM) of the server's /proc status, in
// bytes.
func rssOf(tb testing.TB, p *batonProcess, field string) int64 {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		tb.Fatalf("read the server's status: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			tb.Fatalf("%s: %v", field, err)
		}
		return kb << 10
	}
	tb.Fatalf("no %s in /proc/%d/status", field, p.cmd.Process.Pid)
	return 0
}

// cpuOf reads the CPU time (user and system) the server has used.
func cpuOf(tb testing.TB, p *batonProcess) time.Duration {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		tb.Fatalf("read the server's stat: %v", err)
	}
	// The fields after the command name, which ends with the last ')':
	// utime and stime are the 12th and 13th, in clock ticks (100 a
	// second on Linux).
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		tb.Fatalf("short /proc/%d/stat", p.cmd.Process.Pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("/proc/%d/stat: utime %q, stime %q", p.cmd.Process.Pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// goroutines reads go_goroutines from the server's /metrics.
func goroutines(tb testing.TB, p *batonProcess) int {
	tb.Helper()
	resp, err := http.Get(p.URL + "/metrics")
	if err != nil {
		tb.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("go_goroutines %q: %v", v, err)
			}
			return int(f)
		}
	}
	tb.Fatalf("no go_goroutines in /metrics")
	return 0
}

func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive count", name, v)
	}
	return n
}

func benchServeArgs() []string { return strings.Fields(os.Getenv("BATON_BENCH_SERVE_ARGS")) }
