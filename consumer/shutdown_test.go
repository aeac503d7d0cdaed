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
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// Shutdown with work in every state: a receive in flight, ten handlers
// still running, five deletes pending in the batcher. Every lease comes back
// at once, once the receive has ended (it must not take any of them: each
// receive spends one of the message's maxReceiveCount), every delete is
// flushed, and the report's counts are exact.
func TestShutdownReport(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
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
		poll.For(t, 5*time.Second, func() error {
			// EventHandled comes once the runtime no longer counts the attempt
			// as running: the five finished ones must not look drained.
			if started.Load() != 15 || h.obs.Count(consumer.EventHandled) != 5 || len(h.sqs.Calls("ReceiveMessage")) < 2 {
				return fmt.Errorf("started %d handled %d receives %d", started.Load(), h.obs.Count(consumer.EventHandled), len(h.sqs.Calls("ReceiveMessage")))
			}
			return nil
		})
		h.settle()
		if n := len(h.sqs.Calls("DeleteMessageBatch")); n != 0 {
			t.Fatalf("deletes sent before shutdown: %d, want 0 (window of an hour)", n)
		}
		// Both clocks run: the drain (to 10 s) and the receive's long poll
		// (10 s) end about together, in either order.
		r := awaitReportTogether(h, shutdownAsync(h, 15*time.Second), 100*time.Millisecond)
		// The receive in flight is awaited, and brings nothing: the
		// cancelled attempts' messages are released once it has ended.
		r.Duration, r.Err = 0, nil
		if want := (consumer.Report{ReceivesAwaited: 1, Cancelled: 10, Released: 10, DeletesFlushed: 5}); r != want {
			t.Errorf("report %+v, want %+v", r, want)
		}
		var deleted, visible int
		for _, m := range h.states() {
			switch {
			case m.Deleted:
				deleted++
			case !m.InFlight && !m.VisibleAt.After(h.clock.Now()):
				visible++
				if m.Receives != 1 {
					t.Errorf("%s: received %d times, want once (the stop must cost no receive)", m.ID, m.Receives)
				}
			}
		}
		if deleted != 5 || visible != 10 {
			t.Errorf("deleted %d visible %d, want 5 and 10", deleted, visible)
		}
		if got := h.obs.Reasons(consumer.EventReleased)[consumer.ReasonShutdown]; got != r.Released {
			t.Errorf("shutdown releases observed %d, want the report's %d", got, r.Released)
		}
		if n := len(h.sqs.Calls("DeleteMessageBatch")); n != 1 {
			t.Errorf("delete calls %d, want 1 (five pending deletes in one batch)", n)
		}
	})
}

// shutdownAsync calls Shutdown in a goroutine with a deadline d away (on
// the bubble's clock), and returns where its report will come.
func shutdownAsync(h *harness, d time.Duration) <-chan consumer.Report {
	done := make(chan consumer.Report, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		done <- h.c.Shutdown(ctx)
	}()
	return done
}

// awaitReportTogether waits for a report, moving the bubble's clock
// (Shutdown's deadlines) and the runtime's fake clock together by step,
// the bubble's first: Shutdown's deadlines come no later than the
// runtime's timers set for the same instant.
func awaitReportTogether(h *harness, done <-chan consumer.Report, step time.Duration) consumer.Report {
	h.t.Helper()
	for i := 0; i < 10000; i++ {
		h.settle()
		select {
		case r := <-done:
			return r
		default:
		}
		time.Sleep(step)
		h.settle()
		h.clock.Advance(step)
	}
	h.t.Fatal("Shutdown did not return")
	return consumer.Report{}
}

// awaitReport waits for a report, moving the fake clock by step (if > 0)
// each time the consumer has nothing left to do, or letting the bubble's
// clock run (for Shutdown's own deadlines) if step is 0.
func awaitReport(h *harness, done <-chan consumer.Report, step time.Duration) consumer.Report {
	h.t.Helper()
	for i := 0; i < 10000; i++ {
		h.settle()
		select {
		case r := <-done:
			return r
		default:
		}
		if step > 0 {
			h.clock.Advance(step)
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	h.t.Fatal("Shutdown did not return")
	return consumer.Report{}
}

// Handlers that finish during the drain are not cancelled; their deletes
// are flushed. The handlers are let go once Shutdown has begun (it waits
// in the drain), so no real-time delay decides what counts as drained. The
// receive in flight waits on the fake clock, which stands still: it is
// cancelled when only the margin of the deadline is left.
func TestShutdownDrains(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "drain", nil)
		for i := 0; i < 3; i++ {
			h.sqs.Send(h.url, "x", "")
		}
		g := newGate()
		defer g.open()
		var started atomic.Int32
		causes := make(chan error, 3)
		c, err := consumer.New(h.sqs, h.url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			started.Add(1)
			<-g.ch
			causes <- context.Cause(ctx)
			return nil
		}), h.opts(nil)...)
		if err != nil {
			t.Fatal(err)
		}
		h.run(c)
		poll.For(t, 5*time.Second, func() error {
			if started.Load() != 3 || len(h.sqs.Calls("ReceiveMessage")) < 2 {
				return fmt.Errorf("started %d, receives %d", started.Load(), len(h.sqs.Calls("ReceiveMessage")))
			}
			return nil
		})
		done := shutdownAsync(h, 8*time.Second)
		h.settle()
		g.open()
		r := awaitReport(h, done, 0)
		r.Duration = 0
		if want := (consumer.Report{ReceivesCancelled: 1, Drained: 3, DeletesFlushed: 3}); r != want {
			t.Errorf("report %+v, want %+v", r, want)
		}
		for i := 0; i < 3; i++ {
			if err := <-causes; err != nil {
				t.Errorf("a draining handler saw cause %v, want none", err)
			}
		}
	})
}

// lateReceiver answers a receive only after it was cancelled (when
// Shutdown can wait no longer), with what the queue holds then: the
// messages arrive after the stop was asked, in the deadline's margin.
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
	bubble(t, func(t *testing.T) {
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
		go func() { _, err := c.Run(context.Background()); done <- err }()
		poll.For(t, 5*time.Second, func() error {
			if lr.calls.Load() == 0 {
				return fmt.Errorf("no receive yet")
			}
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r := c.Shutdown(ctx)
		r.Duration = 0
		if want := (consumer.Report{ReceivesAwaited: 1, LateArrivals: 2, Released: 2}); r != want {
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
	})
}

// A handler that ignores ErrShutdown: after the grace its lease is released
// anyway and the report counts it stuck. Shutdown's grace and the
// scheduler's end of grace for the attempt fall at the same fake instant,
// so either may end the lease; both must release it. The deadline leaves
// no drain (it is all shutdown reserve), so only the fake clock decides.
func TestShutdownStuckHandler(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "stuckstop", nil)
		id := h.sqs.Send(h.url, "x", "")
		release := make(chan struct{})
		defer close(release)
		var started, cancelled atomic.Int32
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			started.Add(1)
			<-ctx.Done()
			cancelled.Add(1)
			<-release
			return nil
		}), consumer.WithGrace(2*time.Second), consumer.WithVisibilityTimeout(30*time.Second))
		poll.For(t, 5*time.Second, func() error {
			if started.Load() != 1 || len(h.sqs.Calls("ReceiveMessage")) < 2 {
				return fmt.Errorf("started %d, receives %d", started.Load(), len(h.sqs.Calls("ReceiveMessage")))
			}
			return nil
		})
		h.settle()
		done := shutdownAsync(h, 5*time.Second) // = the default reserve: no drain
		poll.For(t, 5*time.Second, func() error {
			if cancelled.Load() != 1 {
				return fmt.Errorf("handler not cancelled")
			}
			return nil
		})
		r := awaitReport(h, done, 500*time.Millisecond) // the grace runs on the fake clock
		r.Duration, r.Err = 0, nil
		// The awaited receive ends with nothing: the message is released
		// once, after it.
		if want := (consumer.Report{ReceivesAwaited: 1, Cancelled: 1, Stuck: 1, Released: 1}); r != want {
			t.Errorf("report %+v, want %+v", r, want)
		}
		if m := h.state(id); m.InFlight || m.Deleted || m.Receives != 1 {
			t.Errorf("message in flight %v deleted %v received %d times, want released after one receive", m.InFlight, m.Deleted, m.Receives)
		}
		if n := h.obs.Count(consumer.EventError); n != 0 {
			t.Errorf("error events %d, want 0: %v", n, h.obs.All(consumer.EventError))
		}
	})
}

// A release already in flight when Shutdown comes (here the scheduler's,
// for a stalled handler that ignored its cancel, slowed by the network) is
// not cut off: Shutdown waits for it instead of cancelling it, so the
// message comes back after its backoff, not when its lease lapses.
func TestShutdownWaitsForReleaseInFlight(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "inflightrel", nil)
		id := h.sqs.Send(h.url, "x", "")
		h.sqs.SetFaults(func(c consumertest.Call) consumertest.Fault {
			if c.Op == "ChangeMessageVisibilityBatch" && c.N == 1 {
				return consumertest.Fault{Delay: 2 * time.Second}
			}
			return consumertest.Fault{}
		})
		hd := &causeHandler{ignore: true, rel: make(chan struct{})}
		defer close(hd.rel)
		h.start(hd, consumer.WithConcurrency(1), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithAutoRenew(0),
			consumer.WithStallTimeout(10*time.Second), consumer.WithGrace(3*time.Second),
			consumer.WithRetryPolicy(consumer.RetryPolicy{Base: 5 * time.Second, Jitter: consumer.NoJitter}))
		h.advance(13*time.Second, time.Second) // stalled at 10 s, abandoned at 13 s
		poll.For(t, 5*time.Second, func() error {
			if n := len(cmvCalls(h)); n != 1 {
				return fmt.Errorf("release calls %d, want 1 (in flight)", n)
			}
			return nil
		})
		h.settle()
		done := shutdownAsync(h, 5*time.Second)
		r := awaitReport(h, done, 500*time.Millisecond)
		r.Duration, r.Err = 0, nil
		if want := (consumer.Report{Stuck: 1}); r != want {
			t.Errorf("report %+v, want %+v", r, want)
		}
		if got := h.obs.Reasons(consumer.EventReleased)[consumer.ReasonStalled]; got != 1 {
			t.Errorf("stalled releases %d, want 1; errors %v", got, h.obs.All(consumer.EventError))
		}
		if m := h.state(id); m.Deleted || !m.VisibleAt.Before(consumertest.Epoch.Add(30*time.Second)) {
			t.Errorf("message deleted %v visible at %v, want released with backoff before the lease's end %v",
				m.Deleted, m.VisibleAt, consumertest.Epoch.Add(30*time.Second))
		}
	})
}

// Messages a receive brings after the stop are released under Shutdown's
// deadline: a release that keeps failing (throttled) is given up when the
// deadline passes, not retried until its lease ends. The runtime's clock
// never moves here, so only Shutdown's own deadline can end the retries.
func TestShutdownLateArrivalsWithinDeadline(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		clock := consumertest.NewClock(time.Time{})
		fake := consumertest.NewSQS(clock)
		url := fake.CreateQueue("late", map[string]string{"VisibilityTimeout": "600"})
		fake.Send(url, "a", "")
		fake.SetFaults(throttle("ChangeMessageVisibilityBatch", allCalls))
		lr := &lateReceiver{SQS: fake}
		c, err := consumer.New(lr, url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error { return nil }),
			consumer.WithClock(clock), consumer.WithWaitTime(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		go c.Run(context.Background())
		poll.For(t, 5*time.Second, func() error {
			if lr.calls.Load() == 0 {
				return fmt.Errorf("no receive yet")
			}
			return nil
		})
		h := &harness{t: t, clock: clock, sqs: fake, url: url, c: c}
		done := shutdownAsync(h, 5*time.Second)
		var r consumer.Report
		select {
		case r = <-done:
		case <-time.After(10 * time.Second): // on the bubble's clock
			t.Error("Shutdown with a 5 s deadline still blocked after 10 s")
			r = awaitReport(h, done, time.Second) // let the lease run out
		}
		r.Duration = 0
		if want := (consumer.Report{ReceivesAwaited: 1, LateArrivals: 1, ReleaseFailed: 1, Err: context.DeadlineExceeded}); r != want {
			t.Errorf("report %+v, want %+v", r, want)
		}
	})
}

// Shutdown's flush keeps retrying a throttled delete with backoff while
// its deadline lasts, instead of giving up after one retry.
func TestShutdownRetriesThrottledDeletes(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "flushthrottle", nil)
		for i := 0; i < 3; i++ {
			h.sqs.Send(h.url, fmt.Sprint(i), "")
		}
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error { return nil }),
			consumer.WithDeleteBatchWindow(time.Hour), consumer.WithVisibilityTimeout(60*time.Second))
		poll.For(t, 5*time.Second, func() error {
			if n := h.obs.Count(consumer.EventHandled); n != 3 {
				return fmt.Errorf("handled %d", n)
			}
			return nil
		})
		h.settle()
		h.sqs.SetFaults(throttle("DeleteMessageBatch", 3))
		r := awaitReport(h, shutdownAsync(h, 30*time.Second), 100*time.Millisecond)
		if r.DeletesFlushed != 3 || r.DeleteFailed != 0 {
			t.Errorf("report %+v, want 3 deletes flushed, none failed", r)
		}
		if n := len(h.sqs.Calls("DeleteMessageBatch")); n != 4 {
			t.Errorf("delete calls %d, want 4 (three throttled)", n)
		}
	})
}

// The same for the release of a stuck handler's lease in Shutdown's last
// phases: retried while the deadline lasts, so the message is visible again
// at once instead of when its lease lapses.
func TestShutdownRetriesThrottledReleases(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "relthrottle", nil)
		id := h.sqs.Send(h.url, "x", "")
		g := newGate()
		defer g.open()
		h.startStuck(g, consumer.WithVisibilityTimeout(300*time.Second), consumer.WithGrace(2*time.Second))
		h.settle()
		h.sqs.SetFaults(throttle("ChangeMessageVisibilityBatch", 3))
		r := awaitReport(h, shutdownAsync(h, 5*time.Second), 500*time.Millisecond) // all reserve: no drain
		r.Duration, r.Err = 0, nil
		if want := (consumer.Report{ReceivesAwaited: 1, Cancelled: 1, Stuck: 1, Released: 1}); r != want {
			t.Errorf("report %+v, want %+v", r, want)
		}
		if m := h.state(id); m.InFlight {
			t.Errorf("message in flight until +%v, want released", m.VisibleAt.Sub(consumertest.Epoch))
		}
	})
}

// Shutdown without a deadline does not wait for a handler the scheduler
// has abandoned (stalled, and not returned within the grace): it returns
// once that handler's lease is released, however long its own bound.
func TestShutdownWithoutDeadlineSkipsAbandonedHandler(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "abandoned", nil)
		id := h.sqs.Send(h.url, "x", "")
		g := newGate()
		defer g.open()
		h.start(g.waiter(nil), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithAutoRenew(0), consumer.WithStallTimeout(10*time.Second),
			consumer.WithGrace(2*time.Second), consumer.WithShutdownTimeout(time.Hour))
		done := make(chan consumer.Report, 1)
		go func() { done <- h.c.Shutdown(context.Background()) }()
		// Only the runtime's clock moves: stalled at 10 s, abandoned at 12 s.
		r := awaitReport(h, done, time.Second)
		r.Duration = 0
		if want := (consumer.Report{ReceivesAwaited: 1, Stuck: 1}); r != want {
			t.Errorf("report %+v, want %+v", r, want)
		}
		if got := h.obs.Reasons(consumer.EventReleased)[consumer.ReasonStalled]; got != 1 {
			t.Errorf("stalled releases %d, want 1", got)
		}
		if m := h.state(id); m.Deleted {
			t.Errorf("message deleted, want released")
		}
	})
}

// Shutdown without a deadline is bounded as a whole by WithShutdownTimeout,
// as if it had that deadline: a handler that ignores its cancellation (and
// is not abandoned yet) gets the drain (timeout minus reserve) and the
// grace, then is counted stuck and its lease released.
func TestShutdownWithoutDeadlineIsBounded(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "bounded", nil)
		id := h.sqs.Send(h.url, "x", "")
		g := newGate()
		defer g.open()
		h.start(g.waiter(nil), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithGrace(time.Second), consumer.WithWaitTime(5*time.Second),
			consumer.WithShutdownTimeout(10*time.Second)) // 5 s drain, 5 s reserve
		done := make(chan consumer.Report, 1)
		go func() { done <- h.c.Shutdown(context.Background()) }()
		// Both clocks move together: the bubble's (Shutdown's deadlines)
		// and the runtime's (the grace, the receive's long poll).
		r := awaitReportTogether(h, done, 100*time.Millisecond)
		if r.Duration > 10*time.Second {
			t.Errorf("Shutdown took %v, want at most the 10 s shutdown timeout", r.Duration)
		}
		r.Duration = 0
		if want := (consumer.Report{ReceivesAwaited: 1, Cancelled: 1, Stuck: 1, Released: 1}); r != want {
			t.Errorf("report %+v, want %+v", r, want)
		}
		if m := h.state(id); m.InFlight {
			t.Errorf("message in flight, want released")
		}
	})
}

// A handler stuck at the stop, with the default grace (5 s) and a reserve
// of 4 s: the drain ends 4 s before the deadline and the grace would last
// past it. The release keeps its time (2 s): the grace is cut short, and
// the lease is released within the deadline, not refused by it ("context
// deadline exceeded").
func TestShutdownStuckHandlerKeepsReleaseTime(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "keeprelease", map[string]string{"VisibilityTimeout": "60"})
		id := h.sqs.Send(h.url, "x", "")
		g := newGate()
		defer g.open()
		h.startStuck(g, consumer.WithWaitTime(2*time.Second), consumer.WithShutdownReserve(4*time.Second))
		r := awaitReportTogether(h, shutdownAsync(h, 20*time.Second), 100*time.Millisecond)
		r.Duration = 0
		if want := (consumer.Report{ReceivesAwaited: 1, Cancelled: 1, Stuck: 1, Released: 1}); r != want {
			t.Errorf("report %+v, want %+v", r, want)
		}
		if m := h.state(id); m.InFlight {
			t.Errorf("message in flight until +%v, want released", m.VisibleAt.Sub(consumertest.Epoch))
		}
		if errs := h.obs.All(consumer.EventError); len(errs) != 0 {
			t.Errorf("errors %v, want none", errs)
		}
	})
}
