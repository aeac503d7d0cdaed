package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-sqs/baton/clock"
)

// A database can stop completing commits while it still answers a query:
// a primary whose synchronous standby is gone keeps every commit waiting,
// a frozen one answers nothing, and a node's own statements are the first
// to see it. The store watches its runs (each try of an operation, retry.go)
// so that Ping, the node's /healthz, fails while one waits too long, as
// well as while the database refuses them.

// stallAfter is how long a run may wait for the database before Ping
// reports it: far longer than any statement of a healthy database takes,
// shorter than the retry bound, so that a load balancer drains the node
// while its callers still wait.
const stallAfter = 2 * time.Second

// runWatch tracks the runs in flight.
type runWatch struct {
	mu      sync.Mutex
	next    uint64
	running map[uint64]time.Time // start of each run in flight
}

// begin records a run starting now; end, that it ended.
func (w *runWatch) begin() (end func()) {
	w.mu.Lock()
	if w.running == nil {
		w.running = make(map[uint64]time.Time)
	}
	id := w.next
	w.next++
	w.running[id] = time.Now()
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.running, id)
		w.mu.Unlock()
	}
}

// check says why the database does not complete this node's runs, or
// returns nil: a run waiting longer than stallAfter.
func (w *runWatch) check() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var oldest time.Time
	for _, t := range w.running {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	if !oldest.IsZero() {
		if d := time.Since(oldest); d > stallAfter {
			return fmt.Errorf("database not completing statements: one has waited %v", d.Round(100*time.Millisecond))
		}
	}
	return nil
}

// A database can refuse changes while it answers the health check's query:
// its disk full, the schema's tables dropped, a database made read-only
// for new sessions. Only the operations meet it. Ping fails while an
// operation was refused so within the last refusalHeld, saying how long
// ago and why, so that a load balancer drains the node; it passes again
// once none has been for that long. A database that is away or does not
// answer is not recorded here: Ping's own query meets that.

// refusalHeld is how long Ping reports an operation the database refused:
// far longer than a load balancer's checks are apart (HAProxy's every
// second, deploy/haproxy.cfg), so that it drains the node while refusals
// go on; no longer, since a drained node gets no operations to learn from
// that the database takes changes again.
const refusalHeld = 10 * time.Second

// refusalWatch holds the last refusal an operation gave up on.
type refusalWatch struct {
	clock clock.Clock // the store's (Options.Clock)

	mu   sync.Mutex
	at   time.Time
	what string
	err  error
}

// saw records that an operation gave up on err (what names it), if err is
// the database refusing the work rather than being away or not answering.
func (w *refusalWatch) saw(what string, err error) {
	if !refused(err) {
		return
	}
	now := w.clock.Now()
	w.mu.Lock()
	w.at, w.what, w.err = now, what, err
	w.mu.Unlock()
}

// check says why the last operation refused within refusalHeld failed, or
// returns nil.
func (w *refusalWatch) check() error {
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		return nil
	}
	if ago := now.Sub(w.at); ago < refusalHeld {
		return fmt.Errorf("%s: an operation was refused %v ago: %w", w.what, ago.Round(100*time.Millisecond), w.err)
	}
	return nil
}

// refused reports whether err is the database's answer refusing the work
// (an error with a SQLSTATE), not a connection lost, refused or timed out,
// nor a server going away or starting up, which Ping meets by itself.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return !strings.HasPrefix(pgErr.Code, "08") && !strings.HasPrefix(pgErr.Code, "57P")
}

// A pooled connection can die while idle: a proxy or PgBouncer between the
// node and the database restarted, a firewall dropped it after an idle
// timeout, the database ended it (idle_session_timeout). The pool pings a
// connection idle for more than a second before it hands it out, but not
// one used just before it was cut, and the first statement on it fails.
// An operation runs again (retry.go); Ping runs once, and would report the
// database unreachable while it is fine, so that a load balancer drains
// the node for nothing.

// onLiveConn runs f on a connection of the pool, and again on another each
// time the one f got turned out dead: f failed, the failure closed the
// connection, and not because the database took too long (one that does
// not answer is not answering on any connection). It tries at most once
// per connection the pool may hold and once more, so that the last try is
// on a connection made afresh: a database really down refuses that one,
// and f's caller hears so.
func (s *Store) onLiveConn(ctx context.Context, f func(*pgxpool.Conn) error) error {
	tries := int(s.pool.Stat().MaxConns()) + 1
	var dead int
	var first error // what the first dead connection said
	for {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		err = f(c)
		closed := c.Conn().IsClosed()
		c.Release() // a closed connection leaves the pool
		if err == nil || !closed || timedOut(err) || ctx.Err() != nil || dead+1 >= tries {
			if err == nil && dead > 0 {
				s.log.Info("PostgreSQL health check found pooled connections closed while idle (a proxy, pooler or firewall between node and database cut them, or the database ended them); the database answered on another",
					"closed", dead, "err", first)
			}
			return err
		}
		if dead == 0 {
			first = err
		}
		dead++
	}
}

// timedOut reports whether err is the end of a wait for the database: a
// deadline that passed, or a network timeout.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}
