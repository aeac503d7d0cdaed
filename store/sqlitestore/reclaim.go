package sqlitestore

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// reclaimChunk is how many dead rows one commit deletes. Deleting a row
// costs a few microseconds, so a chunk adds a few milliseconds to the
// commit that carries it, where deleting a purged queue of a million
// messages in the purge's own commit held every other queue's writes back
// for several seconds.
const reclaimChunk = 1000

// reclaimRetry is how long the reclaimer waits after a failed commit
// before it looks again.
const reclaimRetry = time.Second

// dropped is the through of a deleted queue's reclaim: all its rows.
const dropped = math.MaxInt64

// reclaimer deletes, in the background and a chunk per commit, the rows
// that purges and queue deletions only marked dead (see queuePurge). Its
// jobs start again from the database at the next Open if the store closes
// first.
type reclaimer struct {
	w *writer

	mu   sync.Mutex
	jobs []reclaimJob
	wake chan struct{} // one token: jobs were added

	cancel context.CancelFunc
	done   chan struct{}
	// gate, when tests set it, holds the reclaimer before each chunk
	// until it is closed.
	gate chan struct{}
	// rows counts the rows deleted.
	rows atomic.Int64
	// retry is reclaimRetry, but for tests; guarded by mu.
	retry time.Duration
}

// reclaimJob is the dead rows of one queue: those with pos up to through.
type reclaimJob struct {
	queueID uint64
	through int64
}

func newReclaimer(w *writer) *reclaimer {
	return &reclaimer{w: w, wake: make(chan struct{}, 1), done: make(chan struct{}), retry: reclaimRetry}
}

// add queues a job.
func (r *reclaimer) add(j reclaimJob) {
	r.mu.Lock()
	r.jobs = append(r.jobs, j)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reclaimer) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.run(ctx)
}

// stop ends the reclaimer; what it had left is found again by the next
// Open.
func (r *reclaimer) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
}

func (r *reclaimer) run(ctx context.Context) {
	defer close(r.done)
	for {
		r.mu.Lock()
		var j reclaimJob
		ok := len(r.jobs) > 0
		if ok {
			j = r.jobs[0]
			r.jobs = r.jobs[1:]
		}
		r.mu.Unlock()
		if !ok {
			select {
			case <-r.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		if !r.reclaim(ctx, j) {
			return
		}
	}
}

// reclaim deletes the rows of j a chunk per commit, and reports false if
// the reclaimer is to stop.
func (r *reclaimer) reclaim(ctx context.Context, j reclaimJob) bool {
	for {
		r.mu.Lock()
		gate := r.gate
		r.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return false
			}
		}
		c := &msgReclaim{queueID: j.queueID, through: j.through, limit: reclaimChunk}
		err := r.w.enqueue([]change{c}, nil).wait(ctx)
		// After a failed commit the writer keeps the change and tries it
		// again with its next commits: wait for one of them to succeed
		// rather than queue another chunk each time (a full disk would
		// grow the queue by one a second).
		for err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			r.mu.Lock()
			retry := r.retry
			r.mu.Unlock()
			select {
			case <-time.After(retry):
			case <-ctx.Done():
				return false
			}
			err = r.w.enqueue(nil, nil).wait(ctx)
		}
		if err != nil {
			return false // stopping
		}
		r.rows.Add(c.deleted)
		if c.deleted < reclaimChunk {
			return true
		}
	}
}
