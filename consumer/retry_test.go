package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
)

func TestRetryPolicyDelay(t *testing.T) {
	t.Parallel()
	exp := consumer.RetryPolicy{Base: time.Second, Max: time.Minute, Multiplier: 2, Jitter: consumer.NoJitter}
	tests := []struct {
		name    string
		p       consumer.RetryPolicy
		attempt int
		u       float64
		want    time.Duration
	}{
		{"no jitter first", exp, 1, 0.3, time.Second},
		{"no jitter grows", exp, 4, 0.3, 8 * time.Second},
		{"no jitter capped", exp, 20, 0.3, time.Minute},
		{"attempt 0 is 1", exp, 0, 0.3, time.Second},
		{"full jitter draws", consumer.RetryPolicy{Base: 2 * time.Second, Jitter: consumer.FullJitter}, 3, 0.5, 4 * time.Second},
		{"full jitter floor", consumer.RetryPolicy{Jitter: consumer.FullJitter}, 3, 0, time.Second},
		{"full jitter zero allowed", consumer.RetryPolicy{Jitter: consumer.FullJitter, AllowZero: true}, 3, 0, 0},
		{"equal jitter low", consumer.RetryPolicy{Base: 4 * time.Second, Jitter: consumer.EqualJitter}, 1, 0, 2 * time.Second},
		{"equal jitter high", consumer.RetryPolicy{Base: 4 * time.Second, Jitter: consumer.EqualJitter}, 1, 0.5, 3 * time.Second},
		{"decorrelated low", consumer.RetryPolicy{Base: time.Second, Jitter: consumer.DecorrelatedJitter}, 3, 0, time.Second},
		{"decorrelated high", consumer.RetryPolicy{Base: time.Second, Jitter: consumer.DecorrelatedJitter}, 3, 0.5, 5 * time.Second},
		{"max clamped to 12h", consumer.RetryPolicy{Base: time.Hour, Max: 100 * time.Hour, Jitter: consumer.NoJitter}, 10, 0, consumer.MaxLease},
		{"defaults", consumer.RetryPolicy{}, 1, 0.999, time.Second},
		{"default cap", consumer.RetryPolicy{Jitter: consumer.NoJitter}, 30, 0, 15 * time.Minute},
		{"u out of range", exp, 2, 7, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.p.Delay(tt.attempt, tt.u)
			if got < tt.want-time.Millisecond || got > tt.want+time.Millisecond {
				t.Errorf("Delay(%d, %v) = %v, want %v", tt.attempt, tt.u, got, tt.want)
			}
		})
	}
}

// No policy built from defaults ever yields a zero delay, whatever the
// draw: failing messages cannot spin.
func TestRetryPolicyNeverZero(t *testing.T) {
	t.Parallel()
	for _, j := range []consumer.Jitter{consumer.FullJitter, consumer.EqualJitter, consumer.DecorrelatedJitter, consumer.NoJitter} {
		p := consumer.RetryPolicy{Base: time.Millisecond, Jitter: j}
		for attempt := 1; attempt <= 40; attempt++ {
			for _, u := range []float64{0, 0.001, 0.5, 0.999} {
				if got := p.Delay(attempt, u); got < time.Second {
					t.Fatalf("%v attempt %d u %v: delay %v, want >= 1s", j, attempt, u, got)
				}
			}
		}
	}
}

// WithinLease: a failed message's delay never outlasts what is left of its
// lease (less a second); without it the policy's delay stands.
func TestRetryPolicyWithinLease(t *testing.T) {
	t.Parallel()
	for _, within := range []bool{true, false} {
		t.Run(fmt.Sprintf("within=%v", within), func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				h := newHarness(t, "failing", nil)
				h.sqs.Send(h.url, "x", "")
				p := consumer.RetryPolicy{Base: time.Hour, Max: 2 * time.Hour, Jitter: consumer.NoJitter, WithinLease: within}
				h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
					return errors.New("fails")
				}), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithConcurrency(1), consumer.WithRetryPolicy(p))
				h.awaitReleases(consumer.ReasonError, 1)
				got := h.obs.All(consumer.EventReleased)[0].Delay
				want := time.Hour
				if within {
					want = 29 * time.Second // the 30s lease, just begun, less a second
				}
				if got != want {
					t.Errorf("released with a delay of %v, want %v", got, want)
				}
			})
		})
	}
}
