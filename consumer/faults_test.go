package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// holdUntil returns a handler that reports progress every second of fake
// time until the gate opens or its context ends, then returns ret (or the
// cause).
func holdUntil(clock *consumertest.Clock, g *gate, ret error, causes chan<- error) consumer.Handler {
	return consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		for {
			tm := clock.NewTimer(time.Second)
			select {
			case <-g.ch:
				tm.Stop()
				return ret
			case <-ctx.Done():
				tm.Stop()
				if causes != nil {
					causes <- context.Cause(ctx)
				}
				return ret
			case <-tm.C():
				d.Progress(ctx)
			}
		}
	})
}

// Renewal faults the lease survives: throttling, lost responses, a
// per-entry server error. The runtime retries before the deadline.
func TestRenewalSurvivesFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault func(handle string) consumertest.FaultFunc
	}{
		{"throttled twice", func(string) consumertest.FaultFunc {
			return func(c consumertest.Call) consumertest.Fault {
				if c.Op == "ChangeMessageVisibilityBatch" && c.N <= 2 {
					return consumertest.Fault{Err: consumertest.Throttled()}
				}
				return consumertest.Fault{}
			}
		}},
		{"response lost", func(string) consumertest.FaultFunc {
			return func(c consumertest.Call) consumertest.Fault {
				if c.Op == "ChangeMessageVisibilityBatch" && c.N == 1 {
					return consumertest.Fault{LoseResponse: true}
				}
				return consumertest.Fault{}
			}
		}},
		{"entry fails with InternalError", func(h string) consumertest.FaultFunc {
			return func(c consumertest.Call) consumertest.Fault {
				if c.Op == "ChangeMessageVisibilityBatch" && c.N == 1 {
					return consumertest.Fault{FailEntries: map[string]string{h: "InternalError"}}
				}
				return consumertest.Fault{}
			}
		}},
		{"slow but in time", func(string) consumertest.FaultFunc {
			return func(c consumertest.Call) consumertest.Fault {
				if c.Op == "ChangeMessageVisibilityBatch" && c.N == 1 {
					return consumertest.Fault{Delay: 3 * time.Second}
				}
				return consumertest.Fault{}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bubble(t, func(t *testing.T) {
				h := newHarness(t, "faults", nil)
				id := h.sqs.Send(h.url, "x", "")
				handle := h.sqs.Messages(h.url)[0].ID
				h.sqs.SetFaults(tt.fault(h.url + "|" + handle + "|1"))
				g := newGate()
				h.start(holdUntil(h.clock, g, nil, nil), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithRenewAhead(10*time.Second))
				h.advance(60*time.Second, 500*time.Millisecond)
				g.open()
				poll.For(t, 5*time.Second, func() error {
					if !h.state(id).Deleted {
						return fmt.Errorf("not deleted")
					}
					return nil
				})
				if n := h.obs.Count(consumer.EventLeaseLost); n != 0 {
					t.Errorf("leases lost: %d, want 0", n)
				}
				if got := h.state(id).Receives; got != 1 {
					t.Errorf("receives %d, want 1", got)
				}
				if n := h.obs.Count(consumer.EventRenewed); n < 2 {
					t.Errorf("renewals %d, want >= 2 in 60 s of 30 s leases", n)
				}
			})
		})
	}
}

// Faults that lose the lease: the runtime decides it is lost, cancels the
// handler with ErrLeaseLost, closes Lost, and never sends a renewal after
// the deadline.
func TestLeaseLost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		fault  consumertest.FaultFunc
		action func(h *harness, id string)
		lostBy time.Duration // fake time after receive by which the loss is known
	}{
		{"renewals throttled until the deadline", func(c consumertest.Call) consumertest.Fault {
			if c.Op == "ChangeMessageVisibilityBatch" {
				return consumertest.Fault{Err: consumertest.Throttled()}
			}
			return consumertest.Fault{}
		}, nil, 30 * time.Second},
		{"renewal slower than the lease", func(c consumertest.Call) consumertest.Fault {
			if c.Op == "ChangeMessageVisibilityBatch" {
				return consumertest.Fault{Delay: time.Minute}
			}
			return consumertest.Fault{}
		}, nil, 30 * time.Second},
		{"message deleted by someone else (stale receipt)", nil, func(h *harness, id string) {
			// Another consumer holding an older receipt deletes it.
			_, err := h.sqs.DeleteMessageBatch(context.Background(), deleteInput(h.url, h.url+"|"+id+"|1"))
			if err != nil {
				h.t.Fatal(err)
			}
		}, 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bubble(t, func(t *testing.T) {
				h := newHarness(t, "lost", nil)
				id := h.sqs.Send(h.url, "x", "")
				h.sqs.SetFaults(tt.fault)
				g := newGate()
				defer g.open()
				causes := make(chan error, 1)
				var lease *consumer.Lease
				leaseCh := make(chan *consumer.Lease, 1)
				inner := holdUntil(h.clock, g, nil, causes)
				h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
					leaseCh <- d.Lease()
					return inner.Handle(ctx, d)
				}), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithRenewAhead(10*time.Second), consumer.WithConcurrency(1))
				lease = <-leaseCh
				if tt.action != nil {
					tt.action(h, id)
				}
				h.advance(tt.lostBy, 500*time.Millisecond)
				select {
				case err := <-causes:
					if !errors.Is(err, consumer.ErrLeaseLost) {
						t.Errorf("cause %v, want ErrLeaseLost", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("handler not cancelled")
				}
				select {
				case <-lease.Lost():
				default:
					t.Error("Lost() not closed")
				}
				if n := h.obs.Count(consumer.EventLeaseLost); n != 1 {
					t.Errorf("lease-lost events %d, want 1", n)
				}
				deadline := consumertest.Epoch.Add(30 * time.Second)
				for _, c := range cmvCalls(h) {
					if !c.Time.Before(deadline) {
						t.Errorf("ChangeMessageVisibility sent at %v, after the deadline %v", c.Time, deadline)
					}
				}
				if err := lease.Extend(context.Background(), time.Minute); !errors.Is(err, consumer.ErrLeaseLost) {
					t.Errorf("Extend after loss: %v, want ErrLeaseLost", err)
				}
			})
		})
	}
}

// A handler that succeeds after its lease was lost: the runtime still
// deletes the message with the stale receipt (standard queue) and reports a
// late delete, sparing a duplicate run.
func TestLateDelete(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "late", nil)
		id := h.sqs.Send(h.url, "x", "")
		h.sqs.SetFaults(throttle("ChangeMessageVisibilityBatch", allCalls))
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			<-ctx.Done()
			return nil // finished anyway
		}), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithConcurrency(1))
		h.advance(30*time.Second, time.Second)
		poll.For(t, 5*time.Second, func() error {
			if n := h.obs.Count(consumer.EventLateDelete); n != 1 {
				return fmt.Errorf("late deletes %d, want 1", n)
			}
			return nil
		})
		if !h.state(id).Deleted {
			t.Error("message not deleted by the late delete")
		}
	})
}

// A delete whose request is lost is retried while the lease lasts.
func TestDeleteRetried(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "delretry", nil)
		id := h.sqs.Send(h.url, "x", "")
		h.sqs.SetFaults(func(c consumertest.Call) consumertest.Fault {
			if c.Op == "DeleteMessageBatch" && c.N <= 2 {
				return consumertest.Fault{Err: errors.New("connection reset")}
			}
			return consumertest.Fault{}
		})
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error { return nil }))
		h.advanceUntil(10*time.Second, 100*time.Millisecond, func() error {
			if !h.state(id).Deleted {
				return fmt.Errorf("not deleted")
			}
			return nil
		})
		if n := len(h.sqs.Calls("DeleteMessageBatch")); n != 3 {
			t.Errorf("delete calls %d, want 3", n)
		}
	})
}

// A throttled receive backs off and tries again.
func TestReceiveBacksOff(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "recvthrottle", nil)
		h.sqs.SetFaults(throttle("ReceiveMessage", 3))
		id := h.sqs.Send(h.url, "x", "")
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error { return nil }))
		if n := len(h.sqs.Calls("ReceiveMessage")); n != 1 {
			t.Fatalf("receives before backoff %d, want 1 (no hot loop)", n)
		}
		h.advanceUntil(10*time.Second, 100*time.Millisecond, func() error {
			if !h.state(id).Deleted {
				return fmt.Errorf("not deleted")
			}
			return nil
		})
		if n := h.obs.Count(consumer.EventError); n != 3 {
			t.Errorf("error events %d, want 3", n)
		}
	})
}

// A renewal in flight when the handler fails: the release waits for it, so
// the backoff is the last word (a heartbeat never overwrites a release).
func TestReleaseWaitsForRenewal(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "order", nil)
		id := h.sqs.Send(h.url, "x", "")
		h.sqs.SetFaults(func(c consumertest.Call) consumertest.Fault {
			if c.Op == "ChangeMessageVisibilityBatch" && c.N == 1 {
				return consumertest.Fault{Delay: 2 * time.Second}
			}
			return consumertest.Fault{}
		})
		g := newGate()
		h.start(holdUntil(h.clock, g, errors.New("boom"), nil), consumer.WithVisibilityTimeout(30*time.Second),
			consumer.WithRenewAhead(10*time.Second),
			consumer.WithRetryPolicy(consumer.RetryPolicy{Base: 9 * time.Second, Jitter: consumer.NoJitter}))
		h.advance(20*time.Second, time.Second) // the renewal is now in flight, stuck for 2 s
		poll.For(t, 5*time.Second, func() error {
			if len(cmvCalls(h)) != 1 {
				return fmt.Errorf("renewal not sent")
			}
			return nil
		})
		g.open() // the handler fails while the renewal is in flight
		h.advance(3*time.Second, 500*time.Millisecond)
		poll.For(t, 5*time.Second, func() error {
			if len(cmvCalls(h)) != 2 {
				return fmt.Errorf("release not sent")
			}
			return nil
		})
		calls := cmvCalls(h)
		if got := consumertest.Visibilities(calls[1].Input); len(got) != 1 || got[0] != 9 {
			t.Errorf("last visibility change %v, want [9] (the backoff)", got)
		}
		if !calls[1].Time.After(calls[0].Time) {
			t.Errorf("release at %v not after the renewal at %v", calls[1].Time, calls[0].Time)
		}
		if got, want := h.state(id).VisibleAt, calls[1].Time.Add(9*time.Second); !got.Equal(want) {
			t.Errorf("visible at %v, want %v", got, want)
		}
	})
}
