package engine

import (
	"context"
	"errors"
	"time"

	"github.com/baton-sqs/baton"
)

// Long polls wait on a per-queue channel that sends and releases close, and
// on a clock timer set to the earlier of the wait's end and the moment the
// queue's next hidden message becomes visible (a delay ending or a lease
// lapsing). A waiter takes the channel before it looks at the queue, so a
// send between the look and the wait is never missed.

// waitChan returns the channel closed by the queue's next notify.
func (e *Engine) waitChan(queueID uint64) chan struct{} {
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	ch, ok := e.waiters[queueID]
	if !ok {
		ch = make(chan struct{})
		e.waiters[queueID] = ch
	}
	return ch
}

// notify wakes every long poll waiting on the queue.
func (e *Engine) notify(queueID uint64) {
	e.waitMu.Lock()
	ch, ok := e.waiters[queueID]
	if ok {
		delete(e.waiters, queueID)
	}
	e.waitMu.Unlock()
	if ok {
		close(ch)
	}
}

// waitForRoom marks the queue as having a long poll that waits for room
// under the in-flight limit: the next delete of an in-flight message wakes
// it (madeRoom). A waiter marks the queue before it looks at the in-flight
// count for the last time, so a delete between the look and the wait is
// never missed.
func (e *Engine) waitForRoom(queueID uint64) {
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	e.full[queueID] = true
}

// madeRoom wakes the long polls of the queue if one waits for room under
// the in-flight limit.
func (e *Engine) madeRoom(queueID uint64) {
	e.waitMu.Lock()
	full := e.full[queueID]
	delete(e.full, queueID)
	e.waitMu.Unlock()
	if full {
		e.notify(queueID)
	}
}

// forgetQueue answers the long polls of a deleted queue (they find it
// gone) and drops what the engine kept for them.
func (e *Engine) forgetQueue(queueID uint64) {
	e.waitMu.Lock()
	delete(e.full, queueID)
	e.waitMu.Unlock()
	e.room.forget(queueID)
	e.notify(queueID)
}

// errLookAgain, from a waitFor try, says that it stopped before it had
// looked at every message it might take (it moved many to the dead-letter
// queue): waitFor calls it again at once instead of sleeping.
var errLookAgain = errors.New("engine: look again")

// waitFor calls try until it reports done, the wait passes, the context ends
// or the engine closes. try gets the current time.
func (e *Engine) waitFor(ctx context.Context, queueID uint64, wait time.Duration, try func(now time.Time) (bool, error)) error {
	now := e.clock.Now()
	deadline := now.Add(wait)
	for {
		var ch chan struct{}
		if wait > 0 {
			ch = e.waitChan(queueID)
		}
		done, err := try(now)
		switch {
		case errors.Is(err, baton.ErrUnavailable) && wait > 0:
			// The store gave up retrying (its database is failing over):
			// a long poll keeps waiting for it until the wait passes. A
			// wait cut short (the client left, the engine closes) answers
			// the failed look, not an empty receive: the store did not
			// say the queue had nothing to give. What is left of the wait
			// is counted once the look failed (the store's retries take
			// time): a look that failed past the wait was the last.
			left := deadline.Sub(e.clock.Now())
			if left <= 0 || !e.pauseUnavailable(ctx, left) {
				return err
			}
		case errors.Is(err, errLookAgain):
			if wait <= 0 || ctx.Err() != nil || e.isClosing() {
				return nil
			}
		case err != nil || done || wait <= 0:
			return err
		default:
			if wake, err := e.sleepToLook(ctx, queueID, ch, now, deadline); !wake {
				return err
			}
		}
		if now = e.clock.Now(); !now.Before(deadline) {
			// One last look: a message may have become visible exactly now.
			_, err := try(now)
			if errors.Is(err, errLookAgain) {
				err = nil
			}
			return err
		}
	}
}

// sleepToLook sleeps, after a look at now that took nothing, until ch
// closes, the deadline passes or the queue's next hidden message becomes
// visible, whichever comes first (unavailablePause at most while the store
// cannot say when that is), on a timer of the engine's clock set once the
// store has answered (its retries take time while it fails: a timer
// measured from now would overrun the deadline by that time). It reports
// false, with the error waitFor returns, when the wait is over instead:
// the deadline has passed, the context ended, the engine is closing or
// the store failed.
func (e *Engine) sleepToLook(ctx context.Context, queueID uint64, ch <-chan struct{}, now, deadline time.Time) (bool, error) {
	if !now.Before(deadline) {
		return false, nil
	}
	until := deadline
	next, err := e.nextVisibleAt(ctx, queueID, now)
	if errors.Is(err, baton.ErrUnavailable) {
		next, err = time.Time{}, nil // look again after a while
		until = earliest(until, e.clock.Now().Add(unavailablePause))
	}
	if err != nil && ctx.Err() != nil {
		return false, nil // the client has gone
	}
	if err != nil {
		return false, storeErr(err, "message stats")
	}
	if !next.IsZero() {
		until = earliest(until, next)
	}
	t := e.clock.NewTimer(e.boundSleep(until.Sub(e.clock.Now())))
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C():
	case <-ctx.Done():
		return false, nil
	case <-e.closing:
		return false, nil
	}
	return true, nil
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// unavailablePause is how long a long poll waits before it looks again
// when the store is unavailable.
const unavailablePause = time.Second

// pauseUnavailable waits unavailablePause, or left if shorter, for the
// store to come back; false if the context ended or the engine closed.
func (e *Engine) pauseUnavailable(ctx context.Context, left time.Duration) bool {
	t := e.clock.NewTimer(max(min(unavailablePause, left), 0))
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	case <-e.closing:
		return false
	}
}

// isClosing reports whether Close has been called.
func (e *Engine) isClosing() bool {
	select {
	case <-e.closing:
		return true
	default:
		return false
	}
}
