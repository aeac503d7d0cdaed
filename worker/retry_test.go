package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/worker"
)

// A target that fails every time does not spend a RedrivePolicy's
// receives within seconds, even with every jitter draw at its lowest: the
// delays grow towards what Lambda, which lets a failed message's lease run
// out, takes, and each stays within the lease the message holds, so that
// it reads as a release.
func TestFailuresSpreadOverTheRedrivePolicy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dlq := w.queue("jobs-dlq", nil)
	out, err := w.srv.Client().GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &dlq,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	const lease, maxReceives = 30 * time.Second, 3
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30",
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, out.Attributes["QueueArn"], maxReceives)})
	w.send(url, "m1")
	rec, target := w.httpTarget(func(int, event, *http.Request) (int, http.Header, string) {
		return http.StatusInternalServerError, nil, "down"
	})
	wk, err := worker.New(w.cl, worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target},
		MaxConcurrency: 1, Clock: w.clock, Observer: w.obs, Logger: testLogger(t),
		ConsumerOptions: []consumer.Option{consumer.WithRandom(func() float64 { return 0 }), consumer.WithShutdownReserve(2 * time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wk.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		wk.Shutdown(ctx)
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	w.drivePrompt(10*time.Minute, 500*time.Millisecond, func() error {
		if v, f := w.counts(dlq); v+f != 1 {
			return fmt.Errorf("%d deliveries, the dead-letter queue holds %d", rec.n(), v+f)
		}
		return nil
	})
	if n := rec.n(); n != maxReceives {
		t.Fatalf("%d deliveries before the dead-letter queue, want %d", n, maxReceives)
	}
	rec.mu.Lock()
	first, second := rec.at[1].Sub(rec.at[0]), rec.at[2].Sub(rec.at[1])
	rec.mu.Unlock()
	// The target answers at once. The first release waits 20s, half the
	// first bound (2·60s/3); the second what is left of the lease, less a
	// second, the lease counted from when its receive was sent: a long poll
	// that waited up to 20s for the message leaves at least 10s of it.
	if first < 20*time.Second-time.Second || second < 9*time.Second-time.Second {
		t.Errorf("the %d receives came %v and %v apart, want at least 20s and 9s", maxReceives, first, second)
	}
	for _, e := range w.obs.All(consumer.EventReleased) {
		if e.Delay < time.Second || e.Delay >= lease {
			t.Errorf("released with a delay of %v, want from 1s to within the %v lease", e.Delay, lease)
		}
	}
}
