package engine_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
)

// pollResult is what a long poll started by startPoll answered.
type pollResult struct {
	msgs []engine.ReceivedMessage
	err  error
}

// startPoll starts a long poll of wait seconds and returns where it
// answers; p may set more parameters.
func startPoll(ctx context.Context, e *engine.Engine, ref engine.QueueRef, wait int, p engine.ReceiveParams) <-chan pollResult {
	done := make(chan pollResult, 1)
	p.WaitTimeSeconds = ptr(wait)
	go func() {
		msgs, err := e.ReceiveMessage(ctx, ref, p)
		done <- pollResult{msgs, err}
	}()
	return done
}

// waitTimers waits until the fake clock has n pending timers: n long polls
// are asleep.
func waitTimers(t *testing.T, clock *baton.FakeClock, n int) {
	t.Helper()
	testutil.CheckFor(t, 5*time.Second, func() error {
		if got := clock.Timers(); got != n {
			return fmt.Errorf("pending timers: %d, want %d", got, n)
		}
		return nil
	})
}

// mustAnswer waits (on the wall clock, the fake one standing still) for a
// long poll's answer.
func mustAnswer(t *testing.T, done <-chan pollResult, what string) pollResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(3 * time.Second):
		t.Fatalf("%s: long poll still waiting 3 s later with the fake clock standing still", what)
		return pollResult{}
	}
}

// mustStillWait checks that a long poll has not answered.
func mustStillWait(t *testing.T, done <-chan pollResult, what string) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("%s: long poll answered %d messages (err %v), want it still waiting", what, len(r.msgs), r.err)
	case <-time.After(50 * time.Millisecond):
	}
}

// A long poll waits on its own queue only: a send to another queue neither
// answers it nor wakes it for good, and a send to its queue answers it at
// once, with no clock movement.
func TestLongPollWokenByItsQueueOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	a, b := mkQueue(t, e, "a", nil), mkQueue(t, e, "b", nil)
	done := startPoll(ctx, e, a, 20, engine.ReceiveParams{})
	waitTimers(t, clock, 1)
	if _, err := e.SendMessage(ctx, b, engine.SendParams{Body: "for b"}); err != nil {
		t.Fatal(err)
	}
	mustStillWait(t, done, "send to another queue")
	if _, err := e.SendMessage(ctx, a, engine.SendParams{Body: "for a"}); err != nil {
		t.Fatal(err)
	}
	r := mustAnswer(t, done, "send to the polled queue")
	if r.err != nil || len(r.msgs) != 1 || r.msgs[0].Body != "for a" {
		t.Fatalf("got %v, %v; want the message sent to a", r.msgs, r.err)
	}
}

// Of many long polls on one queue, one send answers exactly one; the others
// go back to waiting (none answers empty before its wait ends), and end
// empty when it does.
func TestLongPollManyWaitersOneSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "herd", nil)
	const n = 200
	dones := make([]<-chan pollResult, n)
	for i := range dones {
		dones[i] = startPoll(ctx, e, ref, 20, engine.ReceiveParams{})
	}
	waitTimers(t, clock, n)
	if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "one"}); err != nil {
		t.Fatal(err)
	}
	// The winner answers; the rest sleep again (a timer each).
	winner := -1
	testutil.CheckFor(t, 5*time.Second, func() error {
		for i, d := range dones {
			select {
			case r := <-d:
				if winner >= 0 || r.err != nil || len(r.msgs) != 1 {
					t.Fatalf("poll %d answered %d messages (err %v) before its wait ended; poll %d answered already", i, len(r.msgs), r.err, winner)
				}
				winner = i
				dones[i] = nil
			default:
			}
		}
		if winner < 0 {
			return errors.New("no poll got the message")
		}
		if got := clock.Timers(); got != n-1 {
			return fmt.Errorf("pending timers: %d, want %d", got, n-1)
		}
		return nil
	})
	clock.Advance(20 * time.Second)
	for i, d := range dones {
		if d == nil {
			continue
		}
		if r := mustAnswer(t, d, fmt.Sprint("poll ", i)); r.err != nil || len(r.msgs) != 0 {
			t.Fatalf("poll %d: %d messages, %v; want none", i, len(r.msgs), r.err)
		}
	}
}

// A long poll whose client goes away (its context ends) answers at once and
// leaves no goroutine or timer behind.
func TestLongPollCancelFreesAll(t *testing.T) {
	// Not parallel: it counts the process's goroutines.
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "gone", nil)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	const n = 50
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.ReceiveMessage(ctx, ref, engine.ReceiveParams{WaitTimeSeconds: ptr(20)})
		}()
	}
	waitTimers(t, clock, n)
	cancel()
	wg.Wait()
	if got := clock.Timers(); got != 0 {
		t.Errorf("pending timers after the polls ended: %d, want 0", got)
	}
	testutil.CheckFor(t, 5*time.Second, func() error {
		if got := runtime.NumGoroutine(); got > before {
			return fmt.Errorf("goroutines: %d, want at most %d as before the polls", got, before)
		}
		return nil
	})
}

// Close answers every waiting long poll empty, at once, and later long
// polls do not wait.
func TestLongPollAnsweredOnClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "closing", nil)
	done := startPoll(ctx, e, ref, 20, engine.ReceiveParams{})
	waitTimers(t, clock, 1)
	e.Close()
	if r := mustAnswer(t, done, "close"); r.err != nil || len(r.msgs) != 0 {
		t.Fatalf("got %d messages, %v; want none", len(r.msgs), r.err)
	}
	if r := mustAnswer(t, startPoll(ctx, e, ref, 20, engine.ReceiveParams{}), "after close"); r.err != nil {
		t.Fatal(r.err)
	}
}

// A long poll that moves message after message to the dead-letter queue
// goes on to the good message behind them at once: it does not sleep out
// its wait while that message is visible.
func TestLongPollPastManyDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	mkQueue(t, e, "dlq", nil)
	ref := mkQueue(t, e, "src", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"1"}`,
	})
	// More poison messages than one receive's dead-letter rounds, each
	// received once already, then the good one.
	const poison = 15
	for i := range poison {
		if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: fmt.Sprint("poison ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for got := 0; got < poison; {
		msgs, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), VisibilityTimeout: ptr(30)})
		if err != nil || len(msgs) == 0 {
			t.Fatalf("receive the poison messages: %d, %v", len(msgs), err)
		}
		got += len(msgs)
	}
	// The good message becomes visible after the poison ones.
	clock.Advance(31 * time.Second)
	if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "good"}); err != nil {
		t.Fatal(err)
	}
	r := mustAnswer(t, startPoll(ctx, e, ref, 20, engine.ReceiveParams{}), "poison messages ahead of a good one")
	if r.err != nil || len(r.msgs) != 1 || r.msgs[0].Body != "good" {
		t.Fatalf("got %v, %v; want the good message", r.msgs, r.err)
	}
}

// A long poll of a standard queue at its in-flight limit answers as soon as
// a delete makes room and a message is visible, not when its wait ends.
func TestLongPollInFlightLimitWokenByDelete(t *testing.T) {
	t.Parallel()
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e, clock := newEngine(t)
			engine.SetInFlightLimit(e, 1)
			ref := mkQueue(t, e, "full", nil)
			for _, body := range []string{"held", "waiting"} {
				if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: body}); err != nil {
					t.Fatal(err)
				}
			}
			held, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(60)})
			if err != nil || len(held) != 1 {
				t.Fatal(held, err)
			}
			done := startPoll(ctx, e, ref, 20, engine.ReceiveParams{})
			waitTimers(t, clock, 1)
			if batch {
				if _, failed, err := e.DeleteMessageBatch(ctx, ref, []engine.HandleEntry{{ID: "1", ReceiptHandle: held[0].ReceiptHandle}}); err != nil || len(failed) > 0 {
					t.Fatal(failed, err)
				}
			} else if err := e.DeleteMessage(ctx, ref, held[0].ReceiptHandle); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-done:
				if r.err != nil || len(r.msgs) != 1 || r.msgs[0].Body != "waiting" {
					t.Fatalf("got %v, %v; want the waiting message", r.msgs, r.err)
				}
			case <-time.After(3 * time.Second):
				clock.Advance(20 * time.Second)
				r := <-done
				t.Fatalf("long poll still waiting 3 s after the delete made room (answered %d messages once its wait ended)", len(r.msgs))
			}
		})
	}
}

// A long poll of a queue deleted under it answers QueueDoesNotExist at
// once, as it would when it next looked (after its wait, or a second on a
// shared store). What SQS answers then is not documented.
func TestLongPollQueueDeleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "doomed", nil)
	done := startPoll(ctx, e, ref, 20, engine.ReceiveParams{})
	waitTimers(t, clock, 1)
	if err := e.DeleteQueue(ctx, ref); err != nil {
		t.Fatal(err)
	}
	var be *baton.Error
	if r := mustAnswer(t, done, "queue deleted"); !errors.As(r.err, &be) || be.Code != baton.ErrQueueDoesNotExist {
		t.Fatalf("got %d messages, %v; want QueueDoesNotExist", len(r.msgs), r.err)
	}
}

// A long poll of a dead-letter queue answers when a receive of its source
// queue moves a message there.
func TestLongPollOfDeadLetterQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	dlq := mkQueue(t, e, "dlq", nil)
	ref := mkQueue(t, e, "src", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"1"}`,
	})
	if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "poison"}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(0)}); err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	done := startPoll(ctx, e, dlq, 20, engine.ReceiveParams{})
	waitTimers(t, clock, 1)
	if got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{}); err != nil || len(got) != 0 {
		t.Fatalf("second receive of the source: %v, %v; want nothing (moved)", got, err)
	}
	if r := mustAnswer(t, done, "dead-letter move"); r.err != nil || len(r.msgs) != 1 || r.msgs[0].Body != "poison" {
		t.Fatalf("got %v, %v; want the dead-lettered message", r.msgs, r.err)
	}
}

// goneCtx is a request whose client has gone while its Done channel has not
// (yet) been seen closed: the moment a woken long poll may look at it.
type goneCtx struct {
	context.Context
	gone chan struct{}
}

func (c goneCtx) Err() error {
	select {
	case <-c.gone:
		return context.Canceled
	default:
		return nil
	}
}

// A long poll whose client has gone takes no lease when a send wakes it:
// the message stays visible for the next receive instead of being hidden a
// whole visibility timeout inside an answer no one reads.
func TestLongPollOfGoneClientTakesNoLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "gone", map[string]string{"VisibilityTimeout": "30"})
	gctx := goneCtx{Context: ctx, gone: make(chan struct{})}
	done := startPoll(gctx, e, ref, 20, engine.ReceiveParams{})
	waitTimers(t, clock, 1)
	close(gctx.gone)
	if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "m"}); err != nil {
		t.Fatal(err)
	}
	if r := mustAnswer(t, done, "poll of a gone client"); r.err != nil || len(r.msgs) != 0 {
		t.Fatalf("gone client's poll got %d messages (err %v), want none", len(r.msgs), r.err)
	}
	msgs, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("next receive: %d messages (err %v), want the message, visible", len(msgs), err)
	}
	// A short poll of a gone client takes nothing either.
	if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "n"}); err != nil {
		t.Fatal(err)
	}
	if msgs, err := e.ReceiveMessage(gctx, ref, engine.ReceiveParams{}); err != nil || len(msgs) != 0 {
		t.Fatalf("gone client's short poll: %d messages (err %v), want none", len(msgs), err)
	}
}
