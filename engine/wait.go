package engine

import (
	"context"
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
		if err != nil || done || wait <= 0 {
			return err
		}
		sleep := deadline.Sub(now)
		if sleep <= 0 {
			return nil
		}
		st, err := e.store.MessageStats(ctx, baton.MessageStatsParams{QueueID: queueID, Now: now, Bound: 1})
		if err != nil {
			return storeErr(err, "message stats")
		}
		if !st.NextVisibleAt.IsZero() {
			if d := st.NextVisibleAt.Sub(now); d < sleep {
				sleep = d
			}
		}
		t := e.clock.NewTimer(e.boundSleep(sleep))
		select {
		case <-ch:
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-e.closing:
			t.Stop()
			return nil
		}
		t.Stop()
		now = e.clock.Now()
		if !now.Before(deadline) {
			// One last look: a message may have become visible exactly now.
			_, err := try(now)
			return err
		}
	}
}
