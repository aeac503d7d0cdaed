package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil"
)

// TestSNSCrashRecovery publishes to a topic with an enveloped, a raw and
// a filtered queue subscription while `baton serve` (the durable store) is killed
// with SIGKILL at a random moment, restarts it on the same data directory,
// twice, and then drains both queues. Every acknowledged publish must be
// in each queue exactly once (the filtered queue: each whose attribute its
// policy matches, and no other; no retries are made, so no copy twice);
// a publish the kill cut off may be in either, or neither, at most once;
// nothing else may be there. The topic and its subscriptions outlive the
// kills.
func TestSNSCrashRecovery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--account-id", account}
	acked := map[string]bool{} // Message -> acknowledged
	var mu sync.Mutex
	topic := "arn:aws:sns:us-east-1:" + account + ":fanout"
	for round := range 3 {
		p := startBatonArgs(t, args...)
		sqsc, snsc := crashClient(p.URL), crashSNSClient(p.URL)
		if round == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			setUpFanOut(ctx, t, sqsc, snsc)
			cancel()
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Go(func() {
				for i := 0; i < 3000 && ctx.Err() == nil; i++ {
					msg := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					mu.Lock()
					acked[msg] = false
					mu.Unlock()
					_, err := snsc.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(msg),
						MessageAttributes: map[string]snstypes.MessageAttributeValue{
							"worker": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("w%d", w))}}})
					if err == nil {
						mu.Lock()
						acked[msg] = true
						mu.Unlock()
					}
				}
			})
		}
		// Kill the server after a random number of acknowledged
		// publishes.
		countAcked := func() int {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, ok := range acked {
				if ok {
					n++
				}
			}
			return n
		}
		target := countAcked() + 20 + rand.IntN(300)
		testutil.CheckFor(t, 60*time.Second, func() error {
			if n := countAcked(); n < target {
				return fmt.Errorf("round %d: %d publishes acknowledged, waiting for %d", round, n, target)
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
	sqsc := crashClient(p.URL)
	for _, q := range []struct {
		name string
		raw  bool
		// wants reports whether the queue's policy takes msg.
		wants func(msg string) bool
	}{{"fan-env", false, nil}, {"fan-raw", true, nil}, {"fan-w1", true, func(msg string) bool { return strings.Contains(msg, "-w1-") }}} {
		got := drainMessages(t, sqsc, p.queueURL(q.name), q.raw)
		mu.Lock()
		lost, extra, twice, ackedN := 0, 0, 0, 0
		for msg, ok := range acked {
			if q.wants != nil && !q.wants(msg) {
				if got[msg] > 0 {
					extra++
					t.Errorf("%s: %s is there, though its policy does not match it", q.name, msg)
				}
				continue
			}
			if ok {
				ackedN++
				if got[msg] == 0 {
					lost++
					t.Errorf("%s: acknowledged publish %s is missing", q.name, msg)
				}
			}
			if got[msg] > 1 {
				twice++
				t.Errorf("%s: %s is there %d times", q.name, msg, got[msg])
			}
		}
		for msg := range got {
			if _, ok := acked[msg]; !ok {
				extra++
				t.Errorf("%s: %q was never published", q.name, msg)
			}
		}
		mu.Unlock()
		t.Logf("%s: %d acknowledged publishes, %d messages drained; %d lost, %d twice, %d never published", q.name, ackedN, len(got), lost, twice, extra)
	}
}

func crashSNSClient(url string) *awssns.Client {
	return awssns.New(awssns.Options{
		BaseEndpoint:     aws.String(url),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDCRASH", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkhttp.Client(&http.Client{Timeout: 10 * time.Second}),
	})
}

// setUpFanOut makes the queues, the topic and its three subscriptions.
func setUpFanOut(ctx context.Context, t *testing.T, sqsc *sqs.Client, snsc *awssns.Client) {
	t.Helper()
	for _, q := range []string{"fan-env", "fan-raw", "fan-w1"} {
		if _, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q)}); err != nil {
			t.Fatalf("create queue %s: %v", q, err)
		}
	}
	out, err := snsc.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("fanout")})
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	for q, attrs := range map[string]map[string]string{"fan-env": {"RawMessageDelivery": "false"}, "fan-raw": {"RawMessageDelivery": "true"},
		"fan-w1": {"RawMessageDelivery": "true", "FilterPolicy": `{"worker": ["w1"]}`}} {
		if _, err := snsc.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: out.TopicArn, Protocol: aws.String("sqs"),
			Endpoint:   aws.String("arn:aws:sqs:us-east-1:" + account + ":" + q),
			Attributes: attrs}); err != nil {
			t.Fatalf("subscribe %s: %v", q, err)
		}
	}
}

// drainMessages receives and deletes everything a queue holds and counts
// the published messages: the body of a raw copy, the envelope's Message
// otherwise.
func drainMessages(t *testing.T, c *sqs.Client, url string, raw bool) map[string]int {
	t.Helper()
	got := map[string]int{}
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
		for _, m := range out.Messages {
			msg := *m.Body
			if !raw {
				var env struct{ Message string }
				if err := json.Unmarshal([]byte(*m.Body), &env); err != nil {
					t.Fatalf("an envelope that is not JSON: %q", *m.Body)
				}
				msg = env.Message
			}
			got[msg]++
		}
	}
	return got
}
