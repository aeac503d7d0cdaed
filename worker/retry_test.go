package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
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

// A batch that fails whole on a queue with a RedrivePolicy: each message
// draws its own retry delay, so without a batching window they come back
// apart and the good ones succeed in a batch without the bad one; a
// batching window about as long as the delays' spread delivers them as
// one batch again, as far as its receives allow: a window gathers at most
// (MaxConcurrency+1)·⌈BatchSize/10⌉ receives, three here, each bringing
// one of the messages (docs/worker.md says all three).
func TestFailedBatchComesBackApartWithoutAWindow(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		window time.Duration
	}{{"no window", 0}, {"15s window", 15 * time.Second}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			dlq := w.queue("jobs-dlq", nil)
			out, err := w.srv.Client().GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &dlq,
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
			if err != nil {
				t.Fatal(err)
			}
			url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30",
				"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, out.Attributes["QueueArn"])})
			w.send(url, "m0", "bad", "m2")
			rec, target := w.httpTarget(func(_ int, e event, _ *http.Request) (int, http.Header, string) {
				if slices.Contains(e.bodies(), "bad") {
					return http.StatusInternalServerError, nil, "bad"
				}
				return http.StatusOK, nil, ""
			})
			draws := []float64{0, 0.99, 0.5}
			var n atomic.Int64
			random := func() float64 { return draws[int(n.Add(1)-1)%len(draws)] }
			wk, err := worker.New(w.cl, worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, BatchingWindow: tt.window,
				MaxConcurrency: 2, Clock: w.clock, Observer: w.obs, Logger: testLogger(t),
				ConsumerOptions: []consumer.Option{consumer.WithRandom(random), consumer.WithShutdownReserve(2 * time.Second)}})
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
			w.drive(2*time.Minute, 500*time.Millisecond, rec.reach(2))
			first, second := rec.get(0).bodies(), rec.get(1).bodies()
			slices.Sort(first)
			slices.Sort(second)
			if fmt.Sprint(first) != "[bad m0 m2]" {
				t.Fatalf("first delivery %v, want the three together", first)
			}
			if tt.window == 0 && slices.Equal(second, first) {
				t.Errorf("second delivery %v: the failed batch came back whole, want its messages apart (each its own delay)", second)
			}
			if tt.window > 0 && !slices.Equal(second, first) {
				t.Errorf("second delivery %v: want the failed batch together again within the window", second)
			}
			if tt.window == 0 {
				w.drive(2*time.Minute, 500*time.Millisecond, func() error {
					if v, f := w.counts(url); v+f != 1 {
						return fmt.Errorf("the queue holds %d, want only bad", v+f)
					}
					return nil
				})
			}
		})
	}
}
