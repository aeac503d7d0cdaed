package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
)

// Shutdown with work in every state: a receive in flight, ten handlers
// still running, five deletes pending in the batcher. Every lease comes back
// at once, every delete is flushed, and the report's counts are exact.
func TestShutdownReport(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "shutdown", nil)
	for i := 0; i < 15; i++ {
		h.sqs.Send(h.url, fmt.Sprintf("m%d", i), "")
	}
	var started, finished atomic.Int32
	h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		started.Add(1)
		var n int
		fmt.Sscanf(d.Body(), "m%d", &n)
		if n < 5 {
			finished.Add(1)
			return nil
		}
		<-ctx.Done()
		return context.Cause(ctx)
	}), consumer.WithConcurrency(20), consumer.WithReceivers(1), consumer.WithDeleteBatchWindow(time.Hour))
	checkFor(t, 5*time.Second, func() error {
		if started.Load() != 15 || finished.Load() != 5 || len(h.sqs.Calls("ReceiveMessage")) < 2 {
			return fmt.Errorf("started %d finished %d receives %d", started.Load(), finished.Load(), len(h.sqs.Calls("ReceiveMessage")))
		}
		return nil
	})
	h.settle()
	if n := len(h.sqs.Calls("DeleteMessageBatch")); n != 0 {
		t.Fatalf("deletes sent before shutdown: %d, want 0 (window of an hour)", n)
	}
	r := h.stop()
	want := consumer.Report{ReceivesCancelled: 1, Cancelled: 10, Released: 10, DeletesFlushed: 5}
	r.Duration, r.Err = 0, nil
	if r != want {
		t.Errorf("report %+v, want %+v", r, want)
	}
	var deleted, visible int
	for _, m := range h.states() {
		switch {
		case m.Deleted:
			deleted++
		case !m.InFlight && !m.VisibleAt.After(h.clock.Now()):
			visible++
		}
	}
	if deleted != 5 || visible != 10 {
		t.Errorf("deleted %d visible %d, want 5 and 10", deleted, visible)
	}
	if got := h.obs.reasons(consumer.EventReleased)[consumer.ReasonShutdown]; got != 10 {
		t.Errorf("shutdown releases %d, want 10", got)
	}
	if n := len(h.sqs.Calls("DeleteMessageBatch")); n != 1 {
		t.Errorf("delete calls %d, want 1 (five pending deletes in one batch)", n)
	}
}

// Handlers that finish during the drain are not cancelled; their deletes
// are flushed.
func TestShutdownDrains(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "drain", nil)
	for i := 0; i < 3; i++ {
		h.sqs.Send(h.url, "x", "")
	}
	g := newGate()
	var started atomic.Int32
	causes := make(chan error, 3)
	h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		started.Add(1)
		<-g.ch
		causes <- context.Cause(ctx)
		return nil
	}))
	checkFor(t, 5*time.Second, func() error {
		if started.Load() != 3 {
			return fmt.Errorf("started %d", started.Load())
		}
		return nil
	})
	done := make(chan consumer.Report)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done <- h.c.Shutdown(ctx)
	}()
	time.Sleep(20 * time.Millisecond) // real time: let Shutdown reach the drain
	g.open()
	r := <-done
	r.Duration = 0
	if want := (consumer.Report{ReceivesCancelled: 1, Drained: 3, DeletesFlushed: 3}); r != want {
		t.Errorf("report %+v, want %+v", r, want)
	}
	for i := 0; i < 3; i++ {
		if err := <-causes; err != nil {
			t.Errorf("a draining handler saw cause %v, want none", err)
		}
	}
}

// lateReceiver answers a receive only after it was cancelled, with what
// the queue holds then: the messages arrive after the stop was asked.
type lateReceiver struct {
	*consumertest.SQS
	calls atomic.Int32
}

func (l *lateReceiver) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opt ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	l.calls.Add(1)
	<-ctx.Done()
	short := *in
	short.WaitTimeSeconds = 0
	return l.SQS.ReceiveMessage(context.WithoutCancel(ctx), &short, opt...)
}

func TestShutdownReleasesLateArrivals(t *testing.T) {
	t.Parallel()
	clock := consumertest.NewClock(time.Time{})
	fake := consumertest.NewSQS(clock)
	url := fake.CreateQueue("late", nil)
	fake.Send(url, "a", "")
	fake.Send(url, "b", "")
	lr := &lateReceiver{SQS: fake}
	var handled atomic.Int32
	c, err := consumer.New(lr, url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		handled.Add(1)
		return nil
	}), consumer.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	checkFor(t, 5*time.Second, func() error {
		if lr.calls.Load() == 0 {
			return fmt.Errorf("no receive yet")
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := c.Shutdown(ctx)
	r.Duration = 0
	if want := (consumer.Report{ReceivesCancelled: 1, LateArrivals: 2, Released: 2}); r != want {
		t.Errorf("report %+v, want %+v", r, want)
	}
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if n := handled.Load(); n != 0 {
		t.Errorf("late arrivals handled: %d, want 0", n)
	}
	for _, m := range fake.Messages(url) {
		if m.InFlight || m.Receives != 1 {
			t.Errorf("%s: in flight %v receives %d, want released after 1 receive", m.ID, m.InFlight, m.Receives)
		}
	}
}

// A handler that ignores ErrShutdown: after the grace its lease is released
// anyway and the report counts it stuck.
func TestShutdownStuckHandler(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stuckstop", nil)
	id := h.sqs.Send(h.url, "x", "")
	release := make(chan struct{})
	defer close(release)
	var started atomic.Int32
	h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		started.Add(1)
		<-release
		return nil
	}), consumer.WithGrace(2*time.Second), consumer.WithVisibilityTimeout(10*time.Minute)) // the test races the clock
	checkFor(t, 5*time.Second, func() error {
		if started.Load() != 1 {
			return fmt.Errorf("not started")
		}
		return nil
	})
	done := make(chan consumer.Report)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5500*time.Millisecond)
		defer cancel()
		done <- h.c.Shutdown(ctx)
	}()
	var r consumer.Report
	for r.Cancelled == 0 {
		select {
		case r = <-done:
		case <-time.After(5 * time.Millisecond):
			h.clock.Advance(500 * time.Millisecond) // the grace runs on the fake clock
		}
	}
	r.Duration, r.Err = 0, nil
	if want := (consumer.Report{ReceivesCancelled: 1, Cancelled: 1, Stuck: 1, Released: 1}); r != want {
		t.Errorf("report %+v, want %+v", r, want)
	}
	if m := h.state(id); m.InFlight || m.Deleted {
		t.Errorf("message in flight %v deleted %v, want released", m.InFlight, m.Deleted)
	}
}
