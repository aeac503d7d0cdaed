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

// reclaimRetry is how long the reclaimer waits after a failed commit.
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
}

// reclaimJob is the dead rows of one queue: those with pos up to through.
type reclaimJob struct {
	queueID uint64
	through int64
}

func newReclaimer(w *writer) *reclaimer {
	return &reclaimer{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
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
		switch {
		case ctx.Err() != nil || errors.Is(err, ErrClosed):
			return false
		case err != nil:
			// The writer tries the change again with its next commit;
			// this chunk's count is unknown, so ask again later.
			select {
			case <-time.After(reclaimRetry):
				continue
			case <-ctx.Done():
				return false
			}
		}
		r.rows.Add(c.deleted)
		if c.deleted < reclaimChunk {
			return true
		}
	}
}
