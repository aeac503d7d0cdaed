package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

// TestSNSFIFOCrashRecovery publishes to a FIFO topic with an enveloped
// FIFO queue and a raw standard queue subscribed, one message group per
// publisher, each message its own deduplication id, while `baton serve`
// (the durable store) is killed with SIGKILL at a random moment, twice. A
// publisher retries a publish the kill cut off, after the restart, before
// its next one, as a client does. Then both queues are drained. The FIFO
// queue must hold every message exactly once, a retry that found its first
// copy there dropped by the deduplication id the topic passed on, each
// group in publish order; the standard queue every message at least once;
// neither anything never published.
func TestSNSFIFOCrashRecovery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--account-id", account}
	topic := "arn:aws:sns:us-east-1:" + account + ":orders.fifo"
	const publishers = 3
	next := make([]int, publishers) // each publisher's next message, which it publishes until acknowledged
	var (
		mu             sync.Mutex
		acked, retried int
	)
	msgOf := func(w, i int) string { return fmt.Sprintf("w%d-%05d", w, i) }
	publish := func(ctx context.Context, snsc *awssns.Client, w int) error {
		msg := msgOf(w, next[w])
		_, err := snsc.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(msg),
			MessageGroupId: aws.String(fmt.Sprintf("g%d", w)), MessageDeduplicationId: aws.String(msg)})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			retried++
			return err
		}
		next[w]++
		acked++
		return nil
	}
	for round := range 2 {
		p := startBatonArgs(t, args...)
		snsc := crashSNSClient(p.URL)
		if round == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			setUpFIFOFanOut(ctx, t, crashClient(p.URL), snsc)
			cancel()
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range publishers {
			wg.Go(func() {
				for n := 0; n < 3000 && ctx.Err() == nil; n++ {
					publish(ctx, snsc, w) // an error: the same message again
				}
			})
		}
		mu.Lock()
		target := acked + 20 + rand.IntN(200)
		mu.Unlock()
		testutil.CheckFor(t, 60*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if acked < target {
				return fmt.Errorf("round %d: %d publishes acknowledged, waiting for %d", round, acked, target)
			}
			return nil
		})
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill: %v", err)
		}
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: baton did not exit 10s after SIGKILL", round)
		}
		cancel()
		wg.Wait()
	}

	p := startBatonArgs(t, args...)
	snsc := crashSNSClient(p.URL)
	// The publishes a kill cut off, retried until acknowledged.
	for w := range publishers {
		testutil.CheckFor(t, 30*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return publish(ctx, snsc, w)
		})
	}
	sqsc := crashClient(p.URL)
	fifo := drainInOrder(t, sqsc, p.queueURL("ff-env.fifo"), true)
	std := drainInOrder(t, sqsc, p.queueURL("ff-std"), false)
	total := 0
	for w := range publishers {
		total += next[w]
		var want []string
		for i := range next[w] {
			want = append(want, msgOf(w, i))
		}
		group := fmt.Sprintf("g%d", w)
		if got := fifo[group]; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("FIFO queue, group %s: %d messages, want the %d published, once each, in order (first differing at %d)",
				group, len(got), len(want), firstDiff(got, want))
		}
	}
	counts := map[string]int{}
	for _, ms := range std {
		for _, m := range ms {
			counts[m]++
		}
	}
	twice := 0
	for w := range publishers {
		for i := range next[w] {
			switch n := counts[msgOf(w, i)]; {
			case n == 0:
				t.Errorf("standard queue: acknowledged publish %s is missing", msgOf(w, i))
			case n > 1:
				twice++
			}
			delete(counts, msgOf(w, i))
		}
	}
	for m := range counts {
		t.Errorf("standard queue: %q was never published", m)
	}
	t.Logf("%d publishes acknowledged, %d attempts failed and retried; the standard queue holds %d of them twice", total, retried, twice)
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// setUpFIFOFanOut makes the FIFO topic, a FIFO queue subscribed with
// envelopes and a standard queue subscribed raw.
func setUpFIFOFanOut(ctx context.Context, t *testing.T, sqsc *sqs.Client, snsc *awssns.Client) {
	t.Helper()
	if _, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("ff-env.fifo"),
		Attributes: map[string]string{"FifoQueue": "true"}}); err != nil {
		t.Fatalf("create queue: %v", err)
	}
	if _, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("ff-std")}); err != nil {
		t.Fatalf("create queue: %v", err)
	}
	out, err := snsc.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("orders.fifo"),
		Attributes: map[string]string{"FifoTopic": "true"}})
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	for q, raw := range map[string]string{"ff-env.fifo": "false", "ff-std": "true"} {
		if _, err := snsc.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: out.TopicArn, Protocol: aws.String("sqs"),
			Endpoint:   aws.String("arn:aws:sqs:us-east-1:" + account + ":" + q),
			Attributes: map[string]string{"RawMessageDelivery": raw}}); err != nil {
			t.Fatalf("subscribe %s: %v", q, err)
		}
	}
}

// drainInOrder receives and deletes everything a queue holds and returns
// the published messages in the order received, by the publisher's group
// (read from the message itself: a standard queue's copy has none).
func drainInOrder(t *testing.T, c *sqs.Client, url string, envelope bool) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	empty := 0
	for empty < 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 300})
		cancel()
		if err != nil {
			t.Fatalf("drain %s: %v", url, err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		var del []sqstypes.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			msg := *m.Body
			if envelope {
				var env struct{ Message, SequenceNumber string }
				if err := json.Unmarshal([]byte(*m.Body), &env); err != nil || env.SequenceNumber == "" {
					t.Fatalf("an envelope that is not JSON or has no SequenceNumber: %q", *m.Body)
				}
				msg = env.Message
			}
			group, _, _ := strings.Cut(msg, "-")
			got["g"+strings.TrimPrefix(group, "w")] = append(got["g"+strings.TrimPrefix(group, "w")], msg)
			del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		_, err = c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del})
		cancel()
		if err != nil {
			t.Fatalf("delete from %s: %v", url, err)
		}
	}
	return got
}
