package pgstore

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// waker tells the other servers of sends, releases and moves once they have
// committed, with one NOTIFY per queue for all the changes made to it since
// the last round trip.
//
// A NOTIFY inside the transaction that made the messages receivable held
// PostgreSQL's notification lock from the NOTIFY through that transaction's
// commit, WAL flush included, so every sending transaction on every server
// committed one at a time (3,100 sends/s at 32 workers, most backends
// waiting on Lock:object). The waker's transactions write nothing else, and
// a transaction that wrote no WAL before its commit does not wait for its
// commit's flush (nor for a synchronous standby), whatever
// synchronous_commit says, so the lock is held for no flush
// (TestWakeUpNotWaitingForCommits); and a notification now goes out after
// its messages can be seen, never before.
// If a server dies between a commit and its NOTIFY, or the NOTIFY fails
// until it is retried (run), the other servers' long polls find the
// messages by their bounded poll, as when a LISTEN connection is down.
type waker struct {
	s   *Store
	cfg *pgx.ConnConfig

	mu      sync.Mutex
	pending map[uint64]struct{}
	kick    chan struct{} // one token: pending has queues
	cancel  context.CancelFunc
	done    chan struct{}
}

func (w *waker) init(s *Store, cfg *pgx.ConnConfig) {
	w.s = s
	w.cfg = cfg.Copy()
	w.pending = make(map[uint64]struct{})
	w.kick = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go w.run(ctx)
}

// add asks for a notification that queueID has messages to receive.
func (w *waker) add(queueID uint64) {
	w.mu.Lock()
	w.pending[queueID] = struct{}{}
	w.mu.Unlock()
	w.wake()
}

// requeue asks again for the notifications of ids, which failed.
func (w *waker) requeue(ids []uint64) {
	w.mu.Lock()
	for _, id := range ids {
		w.pending[id] = struct{}{}
	}
	w.mu.Unlock()
	w.wake()
}

// wake tells run that pending has queues.
func (w *waker) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// take returns the queues pending and empties pending.
func (w *waker) take() []uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]uint64, 0, len(w.pending))
	for id := range w.pending {
		ids = append(ids, id)
	}
	clear(w.pending)
	return ids
}

// stop sends what is pending, if it can within a second, and ends the
// waker.
func (w *waker) stop() {
	w.cancel()
	<-w.done
}

// run notifies what is pending whenever add asks, on a connection of its
// own, made again when it fails. A notification that fails is not lost: it
// is sent again after a back-off (100 ms, doubling to 5 s), and meanwhile
// the other servers' long polls on its queues find the messages by their
// re-check, at most a second late (baton.Notifier).
func (w *waker) run(ctx context.Context) {
	defer close(w.done)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	backoff := 100 * time.Millisecond
	failures := 0 // in a row
	for {
		stopping := false
		select {
		case <-w.kick:
		case <-ctx.Done():
			stopping = true
		}
		if ids := w.take(); len(ids) > 0 {
			var err error
			if conn, err = w.send(ctx, conn, ids, stopping); err == nil && failures > 0 {
				w.s.log.Info("notifying other servers of new messages again", "failed_attempts", failures)
				backoff, failures = 100*time.Millisecond, 0
			}
			if err != nil && !stopping && ctx.Err() == nil {
				failures++
				w.s.log.Warn("could not notify other servers of new messages; their long polls on these queues find them at their next re-check, at most a second late, until a retry gets through",
					"queues", len(ids), "attempt", failures, "retry_in", backoff, "err", err)
				w.requeue(ids)
				if !pause(ctx, backoff) {
					return
				}
				backoff = min(2*backoff, 5*time.Second)
			}
		}
		if stopping || ctx.Err() != nil {
			return
		}
	}
}

// send notifies ids on conn, connecting first if conn is nil, and returns
// the connection to use next time: nil after a failure, which closes it.
// Once the waker is stopping it has a second.
func (w *waker) send(ctx context.Context, conn *pgx.Conn, ids []uint64, stopping bool) (*pgx.Conn, error) {
	if stopping {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
		defer cancel()
	}
	var err error
	if conn == nil {
		conn, err = pgx.ConnectConfig(ctx, w.cfg.Copy())
	}
	if err == nil {
		err = w.notify(ctx, conn, ids)
	}
	if err != nil && conn != nil {
		conn.Close(context.Background())
		conn = nil
	}
	return conn, err
}

// notify sends one NOTIFY per queue, all in one round trip and one
// transaction.
func (w *waker) notify(ctx context.Context, conn *pgx.Conn, ids []uint64) error {
	b := &pgx.Batch{}
	for _, id := range ids {
		b.Queue(`SELECT pg_notify($1, $2)`, wakeChannel, wakePayload(w.s.origin, id))
	}
	return conn.SendBatch(ctx, b).Close()
}

// wakePayload is a wake-up's payload: "<origin> <queue id>" (parseWake).
func wakePayload(origin string, queueID uint64) string {
	return origin + " " + strconv.FormatUint(queueID, 10)
}
