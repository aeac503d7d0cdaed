package engine

import (
	"context"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
)

// A long poll that finds nothing asks the store when the queue's next hidden
// message becomes visible, to bound its sleep. A send wakes every long poll
// of its queue; all but one find nothing and would each ask at once, and on
// the PostgreSQL store each answer is a scan of the queue's hidden messages'
// index entries. Long polls of one queue that ask while an answer is being
// fetched share it instead. An answer fetched a moment before a poll's own
// look is no less true than one fetched just after it: either may miss a
// lease taken after its read, and a lapse the poll sleeps past is found at
// its next look (every wait ends with one).

// nextVisibleFlight is one store read of a queue's next visible moment, and
// its outcome once done is closed.
type nextVisibleFlight struct {
	done chan struct{}
	at   time.Time
	err  error
	// waiting is how many polls wait for it besides the one that reads.
	waiting int
}

// nextVisibleFlights are the reads running now, by queue.
type nextVisibleFlights struct {
	mu      sync.Mutex
	running map[uint64]*nextVisibleFlight
}

// nextVisibleAt returns when the queue's next hidden message becomes
// visible by the store's count at now (zero if none is hidden), sharing a
// read already running for the queue. The read runs whatever the caller's
// context does meanwhile, so that the polls sharing it are not failed by a
// client that left.
func (e *Engine) nextVisibleAt(ctx context.Context, queueID uint64, now time.Time) (time.Time, error) {
	f := &e.nextVisible
	f.mu.Lock()
	if fl, ok := f.running[queueID]; ok {
		fl.waiting++
		f.mu.Unlock()
		select {
		case <-fl.done:
			return fl.at, fl.err
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
	if f.running == nil {
		f.running = make(map[uint64]*nextVisibleFlight)
	}
	fl := &nextVisibleFlight{done: make(chan struct{})}
	f.running[queueID] = fl
	f.mu.Unlock()

	st, err := e.store.MessageStats(context.WithoutCancel(ctx), baton.MessageStatsParams{QueueID: queueID, Now: now, Bound: 1})
	fl.at, fl.err = st.NextVisibleAt, err
	f.mu.Lock()
	delete(f.running, queueID)
	f.mu.Unlock()
	close(fl.done)
	return fl.at, fl.err
}

// nextVisibleWaiters is how many polls of the queue wait for another's read
// of its next visible moment.
func (e *Engine) nextVisibleWaiters(queueID uint64) int {
	f := &e.nextVisible
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.running[queueID]; ok {
		return fl.waiting
	}
	return 0
}
