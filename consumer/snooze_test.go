package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// snoozeDelays drives a consumer whose handler is never ready until it
// has snoozed n times, and returns the snoozes' delays in order.
func snoozeDelays(t *testing.T, h *harness, n int, after time.Duration, kind consumer.EventKind, reason consumer.Reason, opts ...consumer.Option) []time.Duration {
	t.Helper()
	h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		return consumer.NotReady(after)
	}), append([]consumer.Option{consumer.WithVisibilityTimeout(30 * time.Second), consumer.WithConcurrency(1)}, opts...)...)
	var out []time.Duration
	h.advanceUntil(time.Hour, 100*time.Millisecond, func() error {
		out = out[:0]
		for _, e := range h.obs.All(kind) {
			if kind != consumer.EventReleased || e.Reason == reason {
				out = append(out, e.Delay)
			}
		}
		if len(out) < n {
			return fmt.Errorf("%d snoozes, want %d", len(out), n)
		}
		return nil
	})
	return out[:n]
}

// NotReady(0), again and again: the snoozes back off exponentially per
// delivery with full jitter (here the jitter draw is fixed at 0.5), never
// under 1 s.
func TestNotReadyBacksOff(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "snoozes", nil)
		h.sqs.Send(h.url, "x", "")
		got := snoozeDelays(t, h, 6, 0, consumer.EventSnoozed, "")
		want := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("snooze delays %v, want %v", got, want)
		}
	})
}

// The handler's delay is a floor, and the cap is configurable: without
// jitter, NotReady(2 s) snoozes 2, 2, 4, 5, 5 s under a 5 s cap.
func TestNotReadySnoozePolicy(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "snoozecap", nil)
		h.sqs.Send(h.url, "x", "")
		got := snoozeDelays(t, h, 5, 2*time.Second, consumer.EventSnoozed, "",
			consumer.WithSnoozePolicy(consumer.RetryPolicy{Base: time.Second, Max: 5 * time.Second, Jitter: consumer.NoJitter}))
		want := []time.Duration{2 * time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("snooze delays %v, want %v", got, want)
		}
	})
}

// A snooze by visibility change spends a receive: the one on the last
// receive the redrive policy allows is reported, since SQS moves the
// message to the dead-letter queue at its next receive.
func TestNotReadyOnLastReceiveReported(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		clock := consumertest.NewClock(time.Time{})
		fake := consumertest.NewSQS(clock)
		fake.CreateQueue("last-dlq", nil)
		h := &harness{t: t, clock: clock, sqs: fake, obs: &recorder{}, url: fake.CreateQueue("last", map[string]string{
			"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:last-dlq","maxReceiveCount":3}`})}
		id := h.sqs.Send(h.url, "x", "")
		snoozeDelays(t, h, 3, time.Second, consumer.EventReleased, consumer.ReasonNotReady, consumer.WithSnoozeByVisibility())
		poll.For(t, 5*time.Second, func() error {
			if n := h.obs.Count(consumer.EventLastReceiveSnooze); n != 1 {
				return fmt.Errorf("last-receive snoozes %d, want 1", n)
			}
			return nil
		})
		e := h.obs.All(consumer.EventLastReceiveSnooze)[0]
		if e.MessageID != id || e.Attempt != 3 || e.Delay <= 0 {
			t.Errorf("event %+v, want message %s on attempt 3 with its delay", e, id)
		}
	})
}
