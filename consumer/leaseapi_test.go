package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
)

// The handler's own lease calls: Extend moves the deadline, Release ends
// the lease (the return value is then ignored), and nothing extends a lease
// after it ended.
func TestLeaseAPI(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "api", nil)
		id := h.sqs.Send(h.url, "x", "")
		type result struct {
			epoch                 int64
			before, after         time.Time
			extendErr, relErr     error
			extendAgain, relTwice error
		}
		res := make(chan result, 1)
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			var r result
			l := d.Lease()
			r.epoch = l.Epoch()
			r.before = l.Deadline()
			r.extendErr = l.Extend(ctx, 2*time.Minute)
			r.after = l.Deadline()
			r.relErr = l.Release(ctx, 10*time.Second)
			r.extendAgain = l.Extend(ctx, time.Minute)
			r.relTwice = l.Release(ctx, 0)
			res <- r
			return nil // ignored: the lease was released
		}), consumer.WithVisibilityTimeout(30*time.Second))
		r := <-res
		now := h.clock.Now()
		if r.epoch != 1 {
			t.Errorf("Epoch %d, want 1", r.epoch)
		}
		if r.extendErr != nil || !r.after.Equal(now.Add(2*time.Minute)) || !r.before.Equal(now.Add(30*time.Second)) {
			t.Errorf("Extend: %v, deadline %v -> %v; want nil, now+30s -> now+2m", r.extendErr, r.before, r.after)
		}
		if r.relErr != nil {
			t.Errorf("Release: %v", r.relErr)
		}
		if !errors.Is(r.extendAgain, consumer.ErrLeaseEnded) || !errors.Is(r.relTwice, consumer.ErrLeaseEnded) {
			t.Errorf("after release: Extend %v, Release %v; want ErrLeaseEnded", r.extendAgain, r.relTwice)
		}
		h.awaitReleases(consumer.ReasonHandler, 1)
		h.settle()
		if got := consumertestVisibilities(h); fmt.Sprint(got) != "[120 10]" {
			t.Errorf("visibility changes %v, want [120 10]", got)
		}
		if m := h.state(id); m.Deleted || !m.VisibleAt.Equal(now.Add(10*time.Second)) {
			t.Errorf("message deleted %v visible at %v, want kept, visible at now+10s", m.Deleted, m.VisibleAt)
		}
	})
}

// A handler that keeps reporting progress for longer than SQS lets a lease
// live: it is cancelled with ErrAttemptTimeout before the 12-hour ceiling,
// no renewal ever asks past the ceiling, and the message is released.
func TestLeaseCeiling(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "ceiling", nil)
		id := h.sqs.Send(h.url, "x", "")
		clock := h.clock
		causes := make(chan error, 1)
		var cancelledAt time.Time
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			for {
				tm := clock.NewTimer(time.Minute)
				select {
				case <-tm.C():
					d.Progress(ctx)
				case <-ctx.Done():
					tm.Stop()
					cancelledAt = clock.Now()
					causes <- context.Cause(ctx)
					return ctx.Err()
				}
			}
		}), consumer.WithVisibilityTimeout(time.Hour), consumer.WithRenewAhead(20*time.Minute), consumer.WithStallTimeout(5*time.Minute),
			consumer.WithAutoRenew(0), consumer.WithGrace(5*time.Second), consumer.WithConcurrency(1))
		var cause error
		h.advanceUntil(13*time.Hour, time.Minute, func() error {
			select {
			case cause = <-causes:
				return nil
			default:
				return fmt.Errorf("not cancelled")
			}
		})
		if !errors.Is(cause, consumer.ErrAttemptTimeout) {
			t.Errorf("cause %v, want ErrAttemptTimeout", cause)
		}
		// Cancelled when the grace and one renew-ahead still fit under the
		// ceiling (the clock moves in one-minute steps).
		overrun := consumertest.Epoch.Add(consumer.MaxLease - 20*time.Minute - 5*time.Second)
		if cancelledAt.Before(overrun) || !cancelledAt.Before(overrun.Add(time.Minute)) {
			t.Errorf("cancelled at %v, want within a minute after %v (ceiling less renew-ahead and grace)", cancelledAt, overrun)
		}
		if n := h.obs.Count(consumer.EventRenewFailed); n != 0 {
			t.Errorf("failed renewals %d, want 0 (none asked past the ceiling)", n)
		}
		if n := h.obs.Count(consumer.EventLeaseLost); n != 0 {
			t.Errorf("lost leases %d, want 0", n)
		}
		h.awaitReleases(consumer.ReasonTimeout, 1)
		if m := h.state(id); m.Receives < 1 || m.Deleted {
			t.Errorf("message %+v, want released, not deleted", m)
		}
	})
}

// Extend with a duration that is not positive is refused with
// ErrInvalidExtension and changes nothing: the lease is not marked as at
// its ceiling, so the scheduler keeps renewing it while the handler
// reports progress.
func TestExtendRejectsNonPositive(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "extend0", nil)
		h.sqs.Send(h.url, "x", "")
		g := newGate()
		defer g.open()
		errs := make(chan [2]error, 1)
		inner := holdUntil(h.clock, g, nil, nil)
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			errs <- [2]error{d.Lease().Extend(ctx, 0), d.Lease().Extend(ctx, -time.Second)}
			return inner.Handle(ctx, d)
		}), consumer.WithVisibilityTimeout(30*time.Second))
		for _, err := range <-errs {
			if !errors.Is(err, consumer.ErrInvalidExtension) {
				t.Errorf("Extend by a non-positive duration: %v, want ErrInvalidExtension", err)
			}
		}
		h.advance(2*time.Minute, time.Second) // inside the 5 min auto-renew budget, progress every second
		if n := len(cmvCalls(h)); n == 0 {
			t.Error("no renewal after Extend(ctx, 0)")
		}
		if n := h.obs.Count(consumer.EventLeaseLost); n != 0 {
			t.Errorf("leases lost %d, want 0", n)
		}
	})
}

// Lease.Epoch grows with every delivery, a NotReady re-send included,
// while the attempt number does not grow across the snooze.
func TestEpochGrowsAcrossSnooze(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "epoch", nil)
		h.sqs.Send(h.url, "x", "")
		var mu sync.Mutex
		var epochs []int64
		var attempts []int
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			mu.Lock()
			epochs = append(epochs, d.Lease().Epoch())
			attempts = append(attempts, d.Attempt())
			n := len(epochs)
			mu.Unlock()
			switch n {
			case 1:
				return errors.New("fail") // released: attempt 2 follows
			case 2:
				return consumer.NotReady(2 * time.Second) // re-sent: still attempt 2
			}
			return nil
		}), consumer.WithVisibilityTimeout(30*time.Second))
		h.advanceUntil(time.Minute, time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(epochs) < 3 {
				return fmt.Errorf("deliveries %d", len(epochs))
			}
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(epochs) != "[1 2 3]" || fmt.Sprint(attempts) != "[1 2 2]" {
			t.Errorf("epochs %v attempts %v, want [1 2 3] and [1 2 2]", epochs, attempts)
		}
	})
}
