package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
)

// ErrClosed is returned by calls on a closed Store.
var ErrClosed = errors.New("pebblestore: store closed")

// retryDelay is how long the writer waits after a failed commit before it
// tries the same changes again.
const retryDelay = 100 * time.Millisecond

// gatherYields is how many times the writer yields its processor, when the
// last round held several changes, before it takes the next batch.
// Under load, the requests whose changes the next round could hold
// are mostly runnable goroutines a few microseconds from queueing them; on
// a machine with few cores the writer, woken by the first, would otherwise
// commit it nearly alone and each change would pay for more fsyncs. A
// yield costs about a microsecond and no time passes idle; with one caller
// at a time (last batch of one) the writer never yields, so a lone
// request's latency is unchanged. Measured with 32 senders doing ~20 µs of
// work between sends on 2 cores (on the SQLite log this store had before):
// 15 changes per round instead of 8.
const gatherYields = 3

// writer is the group-commit service: the one goroutine that writes to the
// log. Callers queue changes, in the order they made them, with enqueue;
// the writer takes everything queued, writes it into one batch, commits the
// batch (atomically, synced) and wakes every caller whose change it held.
//
// A failed commit fails the calls waiting on it but keeps its changes, in
// order, ahead of those queued since: the next batch tries them all again.
// So the log only ever holds a prefix of the queued changes, and a change
// no caller was told about is never lost behind one that was. (Pebble
// itself stops the process when it cannot write its log, rather than
// answer from memory what the log may lack; a restart then recovers the
// prefix.)
//
// Each call could instead apply a batch of its own to Pebble under its
// stripe's lock and wait for the log's sync outside it (Pebble groups the
// syncs itself). Measured with BenchmarkSend on 2 cores, that cost more CPU
// per send (49 µs against 41 with 8 senders, 22 against 16 with 64): one
// log record and memtable insertion per call, where the writer makes one
// per round.
type writer struct {
	db *pebble.DB
	// batch is reused from round to round.
	batch *pebble.Batch
	// key and val are the rounds' scratch space.
	key, val []byte
	// pruned is, per FIFO queue, the time through which its
	// deduplication keys were dropped (see txn.finish); tasks are the move
	// tasks the log holds, to keep a source's newest. Both belong to the
	// writer's goroutine.
	pruned map[uint64]time.Time
	tasks  map[string]baton.MoveTask
	// committedFunc is told, after each commit, the pos of the messages
	// whose payloads waited for it in the store's pending map.
	committedFunc func(rows []int64)

	mu       sync.Mutex
	wake     *sync.Cond
	open     *batch // collecting changes
	inflight *batch // being committed, or nil
	closing  bool
	done     chan struct{}
	closeErr error

	commits atomic.Int64
	// removed counts the messages whose records commits deleted (see
	// flushWhenIdle).
	removed atomic.Int64
	// commitNanos is the time spent in commits, failed ones included.
	commitNanos atomic.Int64
	changes     atomic.Int64
	failures    atomic.Int64

	// lastBatch is the number of changes the last round held; it
	// belongs to the writer's goroutine.
	lastBatch int

	// beforeCommit, when tests set it, runs before each round is written,
	// outside the lock; an error it returns fails the round.
	beforeCommit atomic.Pointer[func() error]
}

// batch is the changes of one round and the calls waiting for it.
type batch struct {
	changes []change
	// inserted are the pos of the messages the changes insert or move,
	// whose payloads wait in the store's pending map until the commit.
	inserted []int64
	done     chan struct{}
	err      error // set before done is closed
}

func newBatch() *batch { return &batch{done: make(chan struct{})} }

// settled returns a batch that is already over, with err.
func settled(err error) *batch {
	b := newBatch()
	b.err = err
	close(b.done)
	return b
}

// wait blocks until the batch is committed or failed, or ctx ends; the
// change stays queued either way.
func (b *batch) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newWriter(db *pebble.DB, tasks map[string]baton.MoveTask, committed func(rows []int64)) *writer {
	w := &writer{db: db, batch: db.NewBatch(), pruned: make(map[uint64]time.Time), tasks: tasks,
		committedFunc: committed, open: newBatch(), done: make(chan struct{})}
	w.wake = sync.NewCond(&w.mu)
	return w
}

// start runs the writer until stop.
func (w *writer) start() { go w.run() }

// stop commits what is queued, ends the writer and returns the error of its
// last commit, if that failed.
func (w *writer) stop() error {
	w.mu.Lock()
	w.closing = true
	w.wake.Signal()
	w.mu.Unlock()
	<-w.done
	return w.closeErr
}

// enqueue queues cs behind every change queued before and returns the batch
// to wait for. The caller holds the lock that orders its changes with the
// others on the same messages. With no changes it returns the batch holding
// the latest change queued so far, so that a call which changed nothing
// still answers only from committed state.
func (w *writer) enqueue(cs []change, inserted []int64) *batch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return settled(ErrClosed)
	}
	if len(cs) == 0 {
		switch {
		case len(w.open.changes) > 0:
			return w.open
		case w.inflight != nil:
			return w.inflight
		default:
			return settled(nil)
		}
	}
	w.open.changes = append(w.open.changes, cs...)
	w.open.inserted = append(w.open.inserted, inserted...)
	w.wake.Signal()
	return w.open
}

func (w *writer) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.open.changes) == 0 && !w.closing {
			w.wake.Wait()
		}
		if len(w.open.changes) == 0 {
			w.mu.Unlock()
			return
		}
		if w.lastBatch > 1 && !w.closing {
			w.mu.Unlock()
			for range gatherYields {
				runtime.Gosched()
			}
			w.mu.Lock()
		}
		b := w.open
		w.lastBatch = len(b.changes)
		w.open = newBatch()
		w.inflight = b
		closing := w.closing
		w.mu.Unlock()

		start := clock.System{}.Now()
		err := w.commit(b.changes)
		w.commitNanos.Add(int64(clock.System{}.Now().Sub(start)))

		w.mu.Lock()
		w.inflight = nil
		if err != nil {
			w.failures.Add(1)
			if closing {
				// The last try: fail everyone still waiting.
				w.closeErr = err
				rest := w.open
				w.open = newBatch()
				w.mu.Unlock()
				b.err = err
				close(b.done)
				rest.err = err
				close(rest.done)
				return
			}
			w.open.changes = append(b.changes, w.open.changes...)
			w.open.inserted = append(b.inserted, w.open.inserted...)
		}
		w.mu.Unlock()
		if err == nil {
			w.commits.Add(1)
			w.changes.Add(int64(len(b.changes)))
			w.committedFunc(b.inserted)
			for _, c := range b.changes {
				if ac, ok := c.(afterCommitter); ok {
					ac.afterCommit()
				}
			}
		}
		b.err = err
		close(b.done)
		if err != nil {
			time.Sleep(retryDelay)
		}
	}
}

// commit writes cs into one batch and commits it, synced.
func (w *writer) commit(cs []change) error {
	if hook := w.beforeCommit.Load(); hook != nil {
		if err := (*hook)(); err != nil {
			return err
		}
	}
	w.batch.Reset()
	t := &txn{b: w.batch, w: w, key: w.key, val: w.val}
	defer func() { w.key, w.val = t.key, t.val }()
	for _, c := range cs {
		if err := c.apply(t); err != nil {
			return fmt.Errorf("pebblestore: write: %w", err)
		}
	}
	if err := t.finish(); err != nil {
		return fmt.Errorf("pebblestore: write: %w", err)
	}
	if err := w.batch.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("pebblestore: commit: %w", err)
	}
	w.removed.Add(t.removed)
	return nil
}
