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
// tries the same changes again; it doubles with each failure in a row, up
// to retryDelayMax.
const (
	retryDelay    = 100 * time.Millisecond
	retryDelayMax = 2 * time.Second
)

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
// batch (atomically, and synced under --durability full) and wakes every
// caller whose change it held.
//
// A failed commit fails the calls waiting on it but keeps its changes, in
// order, ahead of those queued since: the next batch tries them all again.
// So the log only ever holds a prefix of the queued changes, and a change
// no caller was told about is never lost behind one that was. (A commit
// whose write or sync of the log fails in Pebble never returns, and every
// change after it is refused (walwatch.go): a restart recovers the prefix.)
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

	// lastBatch is the number of changes the last round held, and
	// streak the failed rounds in a row; they belong to the writer's
	// goroutine.
	lastBatch, streak int

	// timeout is how long a call waits for its commit (Options.WriteTimeout).
	timeout time.Duration
	// committing is when the round being committed began, failingSince
	// when the commits began to fail (Unix nanoseconds, 0 if not); lastErr
	// is the last commit's error, while they fail.
	committing, failingSince atomic.Int64
	lastErr                  atomic.Pointer[error]
	// timedOut counts the calls answered unavailable: their commit took
	// longer than timeout, or they were refused.
	timedOut atomic.Int64

	// wal watches the write-ahead log file in its place: a round
	// committed once it is gone is answered unavailable, and changes
	// refused after it (walwatch.go).
	wal *walWatch

	// beforeCommit, when tests set it, runs before each round is written,
	// outside the lock; an error it returns fails the round.
	beforeCommit atomic.Pointer[func() error]
}

// batch is the changes of one round and the calls waiting for it.
type batch struct {
	// w is the writer committing the batch, nil for one already settled.
	w       *writer
	changes []change
	// inserted are the pos of the messages the changes insert or move,
	// whose payloads wait in the store's pending map until the commit.
	inserted []int64
	done     chan struct{}
	err      error // set before done is closed
}

func (w *writer) newBatch() *batch { return &batch{w: w, done: make(chan struct{})} }

// settled returns a batch that is already over, with err.
func settled(err error) *batch {
	b := &batch{done: make(chan struct{})}
	b.err = err
	close(b.done)
	return b
}

// wait blocks until the batch is committed or failed, ctx ends, or the
// writer's timeout passes (then it fails with baton.ErrUnavailable); the
// change stays queued either way.
func (b *batch) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-b.done:
		return b.err
	default:
	}
	t := time.NewTimer(b.w.timeout)
	defer t.Stop()
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		b.w.timedOut.Add(1)
		return fmt.Errorf("%w: pebblestore: the commit did not end within %v", baton.ErrUnavailable, b.w.timeout)
	}
}

func newWriter(db *pebble.DB, tasks map[string]baton.MoveTask, committed func(rows []int64), timeout time.Duration) *writer {
	w := &writer{db: db, batch: db.NewBatch(), pruned: make(map[uint64]time.Time), tasks: tasks,
		committedFunc: committed, done: make(chan struct{}), timeout: timeout}
	w.open = w.newBatch()
	w.wake = sync.NewCond(&w.mu)
	return w
}

// start runs the writer until stop.
func (w *writer) start() { go w.run() }

// errStuck is returned by stop when the writer's commit did not end in
// time.
var errStuck = errors.New("pebblestore: a commit did not end: the changes still queued are not written (no call was told they were)")

// stop commits what is queued, ends the writer and returns the error of its
// last commit, if that failed. If the writer has not ended within timeout
// (the disk does not take its commit) it returns errStuck, and the writer
// still runs.
func (w *writer) stop(timeout time.Duration) error {
	w.mu.Lock()
	w.closing = true
	w.wake.Signal()
	w.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.done:
		return w.closeErr
	case <-t.C:
		return errStuck
	}
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
		w.open = w.newBatch()
		w.inflight = b
		closing := w.closing
		w.mu.Unlock()

		start := clock.System{}.Now()
		w.committing.Store(start.UnixNano())
		err := unavailable(w.commit(b.changes))
		w.committing.Store(0)
		w.commitNanos.Add(int64(clock.System{}.Now().Sub(start)))

		w.mu.Lock()
		w.inflight = nil
		if err != nil {
			w.failures.Add(1)
			if closing {
				// The last try: fail everyone still waiting.
				w.closeErr = err
				rest := w.open
				w.open = w.newBatch()
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
		if err == nil {
			b.err = w.wal.check()
		}
		close(b.done)
		w.noteOutcome(err, start)
	}
}

// noteOutcome records how a round ended, and after a failure waits before
// the next: retryDelay, doubled for each failure in a row.
func (w *writer) noteOutcome(err error, start time.Time) {
	if err == nil {
		w.streak = 0
		w.failingSince.Store(0)
		w.lastErr.Store(nil)
		return
	}
	w.lastErr.Store(&err)
	w.failingSince.CompareAndSwap(0, start.UnixNano())
	w.streak++
	time.Sleep(min(retryDelay<<min(w.streak-1, 8), retryDelayMax))
}

// refusal returns why the writer cannot take changes now, wrapping
// baton.ErrUnavailable, or nil: the write-ahead log file was removed, a
// commit has run longer than the timeout (the disk does not take it), or
// commits have failed for that long.
func (w *writer) refusal() error {
	if err := w.wal.refusal(); err != nil {
		return err
	}
	now := clock.System{}.Now().UnixNano()
	if began := w.committing.Load(); began != 0 && time.Duration(now-began) >= w.timeout {
		return fmt.Errorf("%w: pebblestore: writes refused: a commit has waited %v for the disk",
			baton.ErrUnavailable, time.Duration(now-began).Round(time.Millisecond))
	}
	if since := w.failingSince.Load(); since != 0 && time.Duration(now-since) >= w.timeout {
		msg := "commits failing"
		if last := w.lastErr.Load(); last != nil {
			msg = fmt.Sprintf("commits failing: %v", *last)
		}
		return fmt.Errorf("%w: pebblestore: writes refused: %s for %v", baton.ErrUnavailable, msg,
			time.Duration(now-since).Round(time.Millisecond))
	}
	return nil
}

// commit writes cs into one batch and commits it with pebble.Sync: under
// --durability full the write-ahead log is fsynced before it returns; under
// relaxed the log's files skip fsync (log.go), so it returns once the batch
// is written to the operating system.
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
