package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-sqs/baton/consumer"
)

// Target is where a worker delivers its batches: an *HTTPTarget or a
// *CommandTarget. The set is closed.
type Target interface {
	// String describes the target for logs.
	String() string

	check() error
	deliver(ctx context.Context, d *delivery) outcome
}

// delivery is one event on its way to the target.
type delivery struct {
	w     *Worker
	event []byte
	// inBatch says whether a message id belongs to the batch.
	inBatch func(id string) bool
	// progress is called whenever the target shows life on its own
	// (a command's progress line).
	progress func()
	// leases are the leases of the batch's messages.
	leases []*consumer.Lease
}

// outcome is what a delivery came to.
type outcome struct {
	// err, if set, fails the whole batch.
	err error
	// failed lists the ids the target reported as failed (only with
	// ReportBatchItemFailures and err nil).
	failed []string
}

// Errors the worker fails messages with. Read them with errors.Is in an
// Observer's EventHandled events.
var (
	// ErrTargetTimeout: a delivery ran past TargetTimeout.
	ErrTargetTimeout = errors.New("worker: the target timed out")
	// ErrStalled: a command wrote no progress line for StallTimeout.
	ErrStalled = errors.New("worker: the command stalled (no progress line on file descriptor 3)")
	// ErrThrottled: the target kept answering 429 or 503 and the batch was
	// released to come back when the target asked.
	ErrThrottled = errors.New("worker: the target is throttling")
	// ErrTargetFailed: the target answered with a failure status or exit
	// status, or could not be reached.
	ErrTargetFailed = errors.New("worker: the target failed")
	// ErrItemFailed: the target listed the message in batchItemFailures.
	ErrItemFailed = errors.New("worker: the target reported the message as failed")
	// ErrSkipped: on a FIFO queue, an earlier message of the batch failed,
	// so this one is released unprocessed to keep its group's order.
	ErrSkipped = errors.New("worker: an earlier message of the FIFO batch failed")
)

// withTimeout returns a context cancelled with cause once d has passed on
// the worker's clock, and its stop function.
func (w *Worker) withTimeout(parent context.Context, d time.Duration, cause error) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	t := w.clock.NewTimer(d)
	stopped := make(chan struct{})
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			cancel(cause)
		case <-stopped:
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		close(stopped)
		cancel(context.Canceled)
	}
}

// sleep waits d on the worker's clock; it reports false if ctx ended first.
func (w *Worker) sleep(ctx context.Context, d time.Duration) bool {
	t := w.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// throttle is one throttled answer: its status and what Retry-After said.
type throttle struct {
	status     string
	retryAfter time.Duration
	hinted     bool
}

// maxThrottleTries bounds the tries of one delivery; the visibility
// timeout bounds them sooner in practice (every wait is at least 1 s).
const maxThrottleTries = 10000

// untilServed calls try until the target does not throttle, waiting between
// tries as Retry-After says (else an exponential backoff from 1 s to 30 s
// with equal jitter, never under 1 s), while the leases are kept. Each wait
// also pauses the worker's receives, as Lambda's event source mapping reads
// less while its function is throttled: messages not yet received stay in
// the queue instead of coming only to be given back. Messages that arrive
// while a pause is in force (in receives that were in flight when it
// began) are held until it ends before their first try (see holdUntried),
// and a later try waits first for what is left of a wait the target asked
// of another delivery. When a wait would end past the queue's visibility
// timeout from the first try (Lambda stops retrying a throttled invocation
// when the lease would end), the batch is released with a delay within
// what is left of its leases (the earliest of leases), so that the server
// reads a release (where a delay past the lease's end reads as a renewal
// and a lapse), and the receives stay paused for the rest of the target's
// wait.
func (w *Worker) untilServed(ctx context.Context, leases []*consumer.Lease, try func(ctx context.Context) (outcome, *throttle)) outcome {
	if out, over := w.holdUntried(ctx, leases); over {
		return out
	}
	budgetEnd := w.clock.Now().Add(w.q.visibility)
	for n := 0; n < maxThrottleTries; n++ {
		if wait, status := w.pausedFor(); n > 0 && wait > 0 {
			if out, over := w.holdOff(ctx, leases, budgetEnd, wait, status); over {
				return out
			}
		}
		out, th := try(ctx)
		if th == nil {
			return out
		}
		wait := th.retryAfter
		if !th.hinted {
			base := min(time.Second<<min(n, 5), 30*time.Second)
			wait = base/2 + time.Duration(w.cfg.Random()*float64(base/2))
		}
		wait = max(wait, time.Second)
		w.pause(wait, th.status)
		if out, over := w.holdOff(ctx, leases, budgetEnd, wait, th.status); over {
			return out
		}
	}
	return outcome{err: fmt.Errorf("%w: gave up after %d tries", ErrThrottled, maxThrottleTries)}
}

// holdUntried holds messages the target has not been sent, while the
// receives are paused for a throttling target, leases kept, until the
// pause ends. Such messages came in receives that were in flight when the
// pause began (a receive is not cancelled: the server may still lease
// messages to a receive whose caller has gone, and they would stay hidden
// a whole lease, having spent a receive). Released instead, each would
// come back having spent a receive (toward the RedrivePolicy's
// maxReceiveCount) on a wait the target asked of other messages: a
// throttle could dead-letter messages it never saw. Only when the wait
// would leave their leases less than a visibility timeout and a target
// timeout before their 12-hour ceiling (the longest a receive's lease can
// last) are they released within their leases at once, and the log says
// that they were not sent. It reports true with the delivery's outcome
// when the delivery is over: released, or ctx ended.
func (w *Worker) holdUntried(ctx context.Context, leases []*consumer.Lease) (outcome, bool) {
	for {
		wait, status := w.pausedFor()
		if wait <= 0 {
			return outcome{}, false
		}
		now := w.clock.Now()
		if now.Add(wait + w.q.visibility + w.cfg.TargetTimeout).After(earliest(leases, (*consumer.Lease).Ceiling)) {
			return w.release(leases, wait, status, "target throttling: releasing messages the target was not sent: its wait outlasts what their leases may last (12 h from their receive); each has spent a receive"), true
		}
		w.log.Info("target throttling: holding messages received as the receives paused, leases kept, until the target's wait ends; they are not sent before",
			"target", w.cfg.Target.String(), "status", status, "messages", len(leases), "wait", wait)
		if !w.sleep(ctx, wait) {
			return outcome{err: context.Cause(ctx)}, true
		}
	}
}

// holdOff waits wait for a throttling target (status: its answer), the
// leases kept, unless the wait would end past budgetEnd: then it releases
// the batch (see untilServed). It reports true with the delivery's outcome
// when the delivery is over: released, or ctx ended.
func (w *Worker) holdOff(ctx context.Context, leases []*consumer.Lease, budgetEnd time.Time, wait time.Duration, status string) (outcome, bool) {
	if w.clock.Now().Add(wait).After(budgetEnd) {
		return w.release(leases, wait, status, "target throttling: releasing the batch within its lease; receives paused until the target's wait ends"), true
	}
	w.log.Info("target throttling: waiting, leases kept, receives paused", "target", w.cfg.Target.String(), "status", status, "wait", wait)
	if !w.sleep(ctx, wait) {
		return outcome{err: context.Cause(ctx)}, true
	}
	return outcome{}, false
}

// release is the outcome that releases a throttled delivery's messages
// within what is left of their leases (the earliest, less a second), for a
// target's wait (status: its answer) that the receives stay paused for;
// msg is the log line that says why.
func (w *Worker) release(leases []*consumer.Lease, wait time.Duration, status, msg string) outcome {
	left := earliest(leases, (*consumer.Lease).Deadline).Sub(w.clock.Now())
	delay := max(min(wait, left.Truncate(time.Second)-time.Second), time.Second)
	w.log.Warn(msg, "target", w.cfg.Target.String(), "status", status, "messages", len(leases), "come_back_in", delay, "receives_paused_for", wait)
	return outcome{err: fmt.Errorf("%w (%s): released to come back in %v, receives paused for %v: %w",
		ErrThrottled, status, delay, wait, consumer.Retry(delay))}
}

// earliest is the earliest of the leases' times at (Deadline, Ceiling).
func earliest(leases []*consumer.Lease, at func(*consumer.Lease) time.Time) time.Time {
	t := at(leases[0])
	for _, l := range leases[1:] {
		if e := at(l); e.Before(t) {
			t = e
		}
	}
	return t
}

// pause holds the worker's receives back for wait, which a throttling
// target (status: its answer) asked for; a pause only grows.
func (w *Worker) pause(wait time.Duration, status string) {
	until := w.clock.Now().Add(wait)
	w.mu.Lock()
	defer w.mu.Unlock()
	if until.After(w.pausedUntil) {
		w.pausedUntil, w.pausedBy = until, status
	}
	if w.cons != nil {
		w.cons.PauseReceives(until)
	}
}

// pausedFor is what is left of the pause a throttling target asked for,
// and its answer.
func (w *Worker) pausedFor() (time.Duration, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pausedUntil.Sub(w.clock.Now()), w.pausedBy
}
