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
// receives within seconds: the delays before the message is dead-lettered
// add up to at least maxReceiveCount-1 leases (what Lambda, which lets a
// failed message's lease run out, takes), even with every jitter draw at
// its lowest.
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
	spread := rec.at[maxReceives-1].Sub(rec.at[0])
	rec.mu.Unlock()
	if want := (maxReceives - 1) * lease; spread < want {
		t.Errorf("the %d receives were spent within %v of the first, want at least %v (maxReceiveCount-1 leases)", maxReceives, spread, want)
	}
}
