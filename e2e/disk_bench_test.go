package e2e_test

import (
	"context"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// BenchmarkDiskChurn sends BATON_BENCH_MESSAGES (default 1,000,000) 1 KiB
// messages of random text to the durable default store by
// SendMessageBatch, then receives and deletes them all, and watches the
// data directory while the server keeps serving. It reports the
// directory's size at its peak (peak-MiB) and once it settles after the
// drain (settled-MiB), how long after the drain that took (settle-s), and
// the send and drain rates. With nothing left, the directory should come
// back to a fixed bound (the memtables' logs, the manifest) whatever was
// sent: compactions drop what deletions covered without a restart.
//
//	go test ./e2e -run '^$' -bench DiskChurn -benchtime 1x -timeout 60m
func BenchmarkDiskChurn(b *testing.B) {
	n := envInt(b, "BATON_BENCH_MESSAGES", 1_000_000)
	for b.Loop() {
		dir := b.TempDir()
		p := startBatonWithin(b, time.Minute, append([]string{"--account-id", account, "--data-dir", dir}, benchServeArgs()...)...)
		// Retries on: in runs of a million messages a request now and
		// then met a kept-alive connection the server had just closed as
		// idle, which the SDK's retry covers as it does for any client.
		c := sqs.New(benchClient(p.URL, 128).Options(), func(o *sqs.Options) { o.RetryMaxAttempts = 5 })
		ctx := context.Background()
		q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("churn")})
		if err != nil {
			b.Fatalf("create queue: %v", err)
		}
		var peak atomic.Int64
		watch := func(stop <-chan struct{}) {
			for {
				peak.Store(max(peak.Load(), treeSize(dir)))
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
				}
			}
		}
		stop := make(chan struct{})
		go watch(stop)

		start := time.Now()
		fillWith(b, c, *q.QueueUrl, n, randomBody)
		sendTime := time.Since(start)
		start = time.Now()
		drainAll(b, c, *q.QueueUrl, n)
		drainTime := time.Since(start)
		close(stop)

		// Settled: no smaller for 20 s. The server keeps answering
		// meanwhile, which also shows it serving.
		settled, drained, lastDrop := treeSize(dir), time.Now(), time.Now()
		for time.Since(lastDrop) < 20*time.Second && time.Since(drained) < 10*time.Minute {
			time.Sleep(time.Second)
			if _, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl}); err != nil {
				b.Fatalf("get queue attributes after the drain: %v", err)
			}
			if size := treeSize(dir); size < settled {
				settled, lastDrop = size, time.Now()
			}
		}
		stopBaton(b, p)

		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-MiB")
		b.ReportMetric(float64(settled)/(1<<20), "settled-MiB")
		b.ReportMetric(lastDrop.Sub(drained).Seconds(), "settle-s")
		b.ReportMetric(float64(n)/sendTime.Seconds(), "sends/s")
		b.ReportMetric(float64(n)/drainTime.Seconds(), "deletes/s")
		b.ReportMetric(0, "ns/op")
	}
}

// randomBody returns 1 KiB of random letters and digits, which compress
// about as little as text does.
func randomBody() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 1024)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

// drainAll receives and deletes n messages from 64 connections.
func drainAll(b *testing.B, c *sqs.Client, url string, n int) {
	var deleted atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for deleted.Load() < int64(n) && !b.Failed() {
				out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
					MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 600})
				if err != nil {
					b.Errorf("receive: %v", err)
					return
				}
				if len(out.Messages) == 0 {
					continue
				}
				entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
				for i, m := range out.Messages {
					entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
				}
				res, err := c.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
				if err != nil {
					b.Errorf("delete batch: %v", err)
					return
				}
				if len(res.Failed) > 0 {
					b.Errorf("delete batch: %d failed: %s", len(res.Failed), aws.ToString(res.Failed[0].Message))
					return
				}
				deleted.Add(int64(len(entries)))
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// treeSize is the size of the files under dir.
func treeSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil { // a compaction may remove it meanwhile
			n += fi.Size()
		}
		return nil
	})
	return n
}
