package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// Receives ask only for free slots: with three slots busy on slow
// messages nothing more is leased, and when one finishes exactly one more
// is fetched while the others still run (no head-of-line blocking).
func TestReceiveOnlyForFreeSlots(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "slots", nil)
		for i := 0; i < 10; i++ {
			h.sqs.Send(h.url, fmt.Sprint(i), "")
		}
		gates := map[string]*gate{}
		for i := 0; i < 10; i++ {
			gates[fmt.Sprint(i)] = newGate()
		}
		var running atomic.Int32
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			running.Add(1)
			defer running.Add(-1)
			select {
			case <-gates[d.Body()].ch:
			case <-ctx.Done():
			}
			return nil
		}), consumer.WithConcurrency(3))
		defer func() {
			for _, g := range gates {
				g.open()
			}
		}()
		inFlight := func() int {
			n := 0
			for _, m := range h.states() {
				if m.InFlight {
					n++
				}
			}
			return n
		}
		poll.For(t, 5*time.Second, func() error {
			if running.Load() != 3 {
				return fmt.Errorf("running %d, want 3", running.Load())
			}
			return nil
		})
		h.settle()
		if n := inFlight(); n != 3 {
			t.Errorf("leased %d, want 3 (one per slot)", n)
		}
		receives := h.sqs.Calls("ReceiveMessage")
		if got := receives[0].Input.(*sqs.ReceiveMessageInput).MaxNumberOfMessages; got != 3 {
			t.Errorf("first receive asked for %d, want 3", got)
		}
		gates["0"].open() // one finishes; the other two keep running
		poll.For(t, 5*time.Second, func() error {
			if running.Load() != 3 || len(h.sqs.Calls("ReceiveMessage")) < 2 {
				return fmt.Errorf("running %d", running.Load())
			}
			return nil
		})
		h.settle()
		if got := h.sqs.Calls("ReceiveMessage")[1].Input.(*sqs.ReceiveMessageInput).MaxNumberOfMessages; got != 1 {
			t.Errorf("second receive asked for %d, want 1", got)
		}
		if n := inFlight(); n != 3 {
			t.Errorf("leased %d after one finished, want 3", n)
		}
	})
}

// Cancelling Run's context shuts the consumer down gracefully: Run returns
// nil and what it held is released.
func TestRunContextShutsDown(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		clock := consumertest.NewClock(time.Time{})
		fake := consumertest.NewSQS(clock)
		url := fake.CreateQueue("runctx", nil)
		fake.Send(url, "x", "")
		started := make(chan struct{})
		c, err := consumer.New(fake, url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			close(started)
			<-ctx.Done()
			return context.Cause(ctx)
		}), consumer.WithClock(clock), consumer.WithShutdownTimeout(6*time.Second), consumer.WithWaitTime(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := c.Run(ctx); done <- err }()
		<-started
		cancel()
		// Both clocks move: the drain's deadline, the receive's long poll.
		for i := 0; ; i++ {
			synctest.Wait()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run = %v, want nil", err)
				}
			default:
				if i > 100 {
					t.Fatal("Run did not return")
				}
				clock.Advance(100 * time.Millisecond)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			break
		}
		if m := fake.Messages(url)[0]; m.InFlight || m.Deleted || m.Receives != 1 {
			t.Errorf("message in flight %v deleted %v received %d times, want released after one receive", m.InFlight, m.Deleted, m.Receives)
		}
		r := c.Shutdown(context.Background())
		// The receive in flight at the stop is awaited (it brings
		// nothing), then the message released.
		if r.Cancelled != 1 || r.ReceivesAwaited != 1 || r.LateArrivals != 0 || r.Released != 1 {
			t.Errorf("report %+v, want one cancelled and released once the receive had ended", r)
		}
	})
}
