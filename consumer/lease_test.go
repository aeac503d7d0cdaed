package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// cmvCalls returns the ChangeMessageVisibilityBatch calls: their times,
// sizes and visibilities.
func cmvCalls(h *harness) []consumertest.Call { return h.sqs.Calls("ChangeMessageVisibilityBatch") }

func TestDeleteOnSuccess(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "ok", nil)
		ids := []string{h.sqs.Send(h.url, "a", ""), h.sqs.Send(h.url, "b", ""), h.sqs.Send(h.url, "c", "")}
		seen := newCounter()
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			seen.add(d.ID())
			if d.Attempt() != 1 || d.AttemptsLeft() != consumer.Unlimited || d.IsFinalAttempt() {
				t.Errorf("%s: attempt %d, left %d, final %v; want 1, unlimited, false", d.ID(), d.Attempt(), d.AttemptsLeft(), d.IsFinalAttempt())
			}
			return nil
		}))
		poll.For(t, 5*time.Second, func() error {
			for _, id := range ids {
				if !h.state(id).Deleted {
					return fmt.Errorf("%s not deleted", id)
				}
			}
			return nil
		})
		for _, id := range ids {
			if got := seen.get(id); got != 1 {
				t.Errorf("%s handled %d times, want 1", id, got)
			}
		}
		if got := h.obs.Reasons(consumer.EventDeleted)[consumer.ReasonDone]; got != 3 {
			t.Errorf("deleted events = %d, want 3", got)
		}
	})
}

// The scheduler renews a lease only once it is within RenewAhead of its
// deadline, asks for the full lease length, and counts from the send time.
func TestRenewOnlyNearExpiry(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "renew", nil)
		id := h.sqs.Send(h.url, "x", "")
		g := newGate()
		h.start(g.waiter(nil), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithRenewAhead(10*time.Second))
		defer g.open()
		h.advance(19*time.Second, time.Second)
		if n := len(cmvCalls(h)); n != 0 {
			t.Fatalf("renewals at 19 s: %d, want 0", n)
		}
		h.advance(time.Second, time.Second)
		poll.For(t, 5*time.Second, func() error {
			if n := len(cmvCalls(h)); n != 1 {
				return fmt.Errorf("renewals at 20 s: %d, want 1", n)
			}
			return nil
		})
		c := cmvCalls(h)[0]
		if got := consumertest.Visibilities(c.Input); len(got) != 1 || got[0] != 30 {
			t.Errorf("renewal asked for %v, want [30]", got)
		}
		if got, want := c.Time, consumertest.Epoch.Add(20*time.Second); !got.Equal(want) {
			t.Errorf("renewal sent at %v, want %v", got, want)
		}
		// The next renewal is due 20 s after this one.
		h.advance(19*time.Second, time.Second)
		if n := len(cmvCalls(h)); n != 1 {
			t.Errorf("renewals at 39 s: %d, want 1", n)
		}
		h.advance(time.Second, time.Second)
		poll.For(t, 5*time.Second, func() error {
			if n := len(cmvCalls(h)); n != 2 {
				return fmt.Errorf("renewals at 40 s: %d, want 2", n)
			}
			return nil
		})
		if got := h.state(id); got.Receives != 1 || !got.InFlight {
			t.Errorf("message receives %d in flight %v, want 1 and true", got.Receives, got.InFlight)
		}
	})
}

// Many leases due at once go out in ChangeMessageVisibilityBatch calls of
// at most ten.
func TestRenewInBatchesOfTen(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "batches", nil)
		for i := 0; i < 25; i++ {
			h.sqs.Send(h.url, fmt.Sprint(i), "")
		}
		g := newGate()
		var mu sync.Mutex
		started := 0
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			mu.Lock()
			started++
			mu.Unlock()
			<-g.ch
			return nil
		}), consumer.WithConcurrency(25), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithRenewAhead(10*time.Second))
		defer g.open()
		poll.For(t, 5*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if started != 25 {
				return fmt.Errorf("%d handlers started, want 25", started)
			}
			return nil
		})
		h.advance(20*time.Second, 5*time.Second)
		poll.For(t, 5*time.Second, func() error {
			if n := len(cmvCalls(h)); n != 3 {
				return fmt.Errorf("%d renewal calls, want 3", n)
			}
			return nil
		})
		var sizes []int
		for _, c := range cmvCalls(h) {
			sizes = append(sizes, len(consumertest.Handles(c.Input)))
		}
		sort.Ints(sizes)
		if fmt.Sprint(sizes) != "[5 10 10]" {
			t.Errorf("batch sizes %v, want [5 10 10]", sizes)
		}
	})
}

// causeHandler blocks until its context ends and records the cause.
type causeHandler struct {
	mu     sync.Mutex
	causes []error
	ignore bool // keep running after the cancel, until release is closed
	rel    chan struct{}
}

func (c *causeHandler) Handle(ctx context.Context, d *consumer.Delivery) error {
	<-ctx.Done()
	c.mu.Lock()
	c.causes = append(c.causes, context.Cause(ctx))
	c.mu.Unlock()
	if c.ignore {
		<-c.rel
	}
	return ctx.Err()
}

func (c *causeHandler) got() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.causes...)
}

// Stall, overrun and the auto-renew budget: the attempt is cancelled with a
// typed cause at the right time, and its message released with backoff.
func TestCancellationCauses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      []consumer.Option
		wantAt    time.Duration
		wantCause error
		reason    consumer.Reason
	}{
		{"stall without auto-renew", []consumer.Option{consumer.WithAutoRenew(0), consumer.WithStallTimeout(10 * time.Second)},
			10 * time.Second, consumer.ErrStalled, consumer.ReasonStalled},
		{"stall after the auto-renew budget", []consumer.Option{consumer.WithAutoRenew(time.Minute), consumer.WithStallTimeout(10 * time.Second)},
			time.Minute, consumer.ErrStalled, consumer.ReasonStalled},
		{"attempt timeout", []consumer.Option{consumer.WithAttemptTimeout(25 * time.Second)},
			25 * time.Second, consumer.ErrAttemptTimeout, consumer.ReasonTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bubble(t, func(t *testing.T) {
				h := newHarness(t, "cancel", nil)
				id := h.sqs.Send(h.url, "x", "")
				hd := &causeHandler{}
				opts := append([]consumer.Option{consumer.WithVisibilityTimeout(30 * time.Second),
					consumer.WithRetryPolicy(consumer.RetryPolicy{Base: 7 * time.Second, Jitter: consumer.NoJitter}),
					consumer.WithConcurrency(1)}, tt.opts...)
				h.start(hd, opts...)
				h.advance(tt.wantAt-time.Second, time.Second)
				if got := hd.got(); len(got) != 0 {
					t.Fatalf("cancelled early, at %v: %v", tt.wantAt-time.Second, got)
				}
				h.advance(time.Second, time.Second)
				h.awaitReleases(tt.reason, 1)
				if got := hd.got(); len(got) != 1 || !errors.Is(got[0], tt.wantCause) {
					t.Fatalf("causes %v, want [%v]", got, tt.wantCause)
				}
				m := h.state(id)
				if want := consumertest.Epoch.Add(tt.wantAt + 7*time.Second); !m.VisibleAt.Equal(want) {
					t.Errorf("visible again at %v, want %v (cancel + 7 s backoff)", m.VisibleAt, want)
				}
				if n := h.obs.Count(consumer.EventLeaseLost); n != 0 {
					t.Errorf("leases lost: %d, want 0", n)
				}
			})
		})
	}
}

// A handler that keeps reporting progress keeps its lease past the
// auto-renew budget and finishes with its first receive.
func TestProgressKeepsLease(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "progress", nil)
		id := h.sqs.Send(h.url, "x", "")
		clock := h.clock
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			for i := 0; i < 24; i++ { // two minutes of work, a progress report every 5 s
				tm := clock.NewTimer(5 * time.Second)
				select {
				case <-tm.C():
				case <-ctx.Done():
					tm.Stop()
					return context.Cause(ctx)
				}
				if err := d.Progress(ctx); err != nil {
					return err
				}
			}
			return nil
		}), consumer.WithVisibilityTimeout(10*time.Second), consumer.WithAutoRenew(0), consumer.WithStallTimeout(8*time.Second))
		h.advanceUntil(3*time.Minute, time.Second, func() error {
			if !h.state(id).Deleted {
				return fmt.Errorf("not deleted yet")
			}
			return nil
		})
		if got := h.state(id).Receives; got != 1 {
			t.Errorf("receives = %d, want 1", got)
		}
		for _, k := range []consumer.EventKind{consumer.EventStalled, consumer.EventLeaseLost} {
			if n := h.obs.Count(k); n != 0 {
				t.Errorf("%v events: %d, want 0", k, n)
			}
		}
		if n := h.obs.Count(consumer.EventRenewed); n < 10 {
			t.Errorf("renewals: %d, want at least 10 over two minutes of 10 s leases", n)
		}
	})
}

// A handler that ignores its cancellation: after the grace the runtime
// releases the lease itself, reports the slot stuck, and keeps the slot
// busy (no new receive for a one-slot consumer) until the handler returns.
func TestStuckSlot(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "stuck", nil)
		id := h.sqs.Send(h.url, "x", "")
		hd := &causeHandler{ignore: true, rel: make(chan struct{})}
		h.start(hd, consumer.WithConcurrency(1), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithAutoRenew(0),
			consumer.WithStallTimeout(10*time.Second), consumer.WithGrace(3*time.Second),
			consumer.WithRetryPolicy(consumer.RetryPolicy{Base: 5 * time.Second, Jitter: consumer.NoJitter}))
		h.advance(10*time.Second, time.Second)
		poll.For(t, 5*time.Second, func() error {
			if len(hd.got()) != 1 {
				return fmt.Errorf("not cancelled")
			}
			return nil
		})
		h.advance(2*time.Second, time.Second)
		if n := h.obs.Count(consumer.EventSlotStuck); n != 0 {
			t.Fatalf("stuck reported inside the grace")
		}
		h.advance(time.Second, time.Second)
		poll.For(t, 5*time.Second, func() error {
			if n := h.obs.Count(consumer.EventSlotStuck); n != 1 {
				return fmt.Errorf("stuck events %d, want 1", n)
			}
			if got := h.obs.Reasons(consumer.EventReleased)[consumer.ReasonStalled]; got != 1 {
				return fmt.Errorf("stalled releases %d, want 1", got)
			}
			return nil
		})
		if got, want := h.state(id).VisibleAt, consumertest.Epoch.Add(13*time.Second+5*time.Second); !got.Equal(want) {
			t.Errorf("visible at %v, want %v", got, want)
		}
		receives := len(h.sqs.Calls("ReceiveMessage"))
		h.advance(30*time.Second, time.Second)
		if got := len(h.sqs.Calls("ReceiveMessage")); got != receives {
			t.Errorf("receives while the only slot is stuck: %d more, want 0", got-receives)
		}
		close(hd.rel)
		poll.For(t, 5*time.Second, func() error {
			if got := len(h.sqs.Calls("ReceiveMessage")); got == receives {
				return fmt.Errorf("slot not freed after the handler returned")
			}
			return nil
		})
		if h.state(id).Deleted {
			t.Errorf("message deleted by an abandoned attempt")
		}
	})
}

// With an auto-renew budget of 0, a lease is renewed only on progress: no
// renewal before the handler's first Progress, and one soon after it, even
// past the lease's renewal point.
func TestAutoRenewZeroRenewsOnlyOnProgress(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "ar0", nil)
		h.sqs.Send(h.url, "x", "")
		g := newGate()
		defer g.open()
		progress := newGate()
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			<-progress.ch
			d.Progress(ctx)
			<-g.ch
			return nil
		}), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithAutoRenew(0), consumer.WithStallTimeout(time.Minute))
		h.advance(22*time.Second, time.Second) // past the renewal point (20 s)
		if n := h.obs.Count(consumer.EventRenewed); n != 0 {
			t.Errorf("renewals without progress %d, want 0 (visibilities %v)", n, consumertestVisibilities(h))
		}
		progress.open()
		h.settle()
		if n := h.obs.Count(consumer.EventRenewed); n != 1 {
			t.Errorf("renewals after the first progress %d, want 1", n)
		}
		h.advance(5*time.Second, time.Second)
		if n := h.obs.Count(consumer.EventLeaseLost); n != 0 {
			t.Errorf("leases lost %d, want 0", n)
		}
	})
}
