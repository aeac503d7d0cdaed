package pgstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/baton-sqs/baton"
)

// A group lock (baton.GroupLocker) is a session-level advisory lock, taken
// with pg_try_advisory_lock on one connection of the store's own, outside
// the pool. A try never waits in the database, so that one connection
// serves every message group; a publish whose group another server holds
// tries again after a short pause. The pool's connections stay free for
// the copies the publish sends: a lock waited for on a pooled connection
// would hold one while the holder's sends need it.
//
// An unlock does not keep its publish waiting: it is queued, and sent in
// the same round trip as the connection's next try, or at once by a
// goroutine of its own if no try comes. Statements on one connection run
// in order and a session's advisory locks count, so a publish of the same
// group that tries before the queued unlock is sent takes the lock a
// second time and keeps it when the unlock runs.
//
// When the connection breaks, PostgreSQL ends its session and every lock
// of it: the store connects again at the next try, and the log names the
// groups whose locks were held or not yet given back, as another server's
// publish of one of them may have come between the copies of a publish
// made here.

var _ baton.GroupLocker = (*Store)(nil)

// Pauses between two tries of a held group lock: the first short, a
// publish's copies commit in milliseconds; then doubling.
const (
	groupLockFirstPause = time.Millisecond
	groupLockMaxPause   = 20 * time.Millisecond
)

// groupLocks is a store's connection for group locks. sem holds the right
// to use conn (pgx connections are not safe for concurrent use) and is
// waited for with the caller's context.
type groupLocks struct {
	log      *slog.Logger
	retryFor time.Duration
	cfg      *pgx.ConnConfig

	sem         chan struct{}
	conn        *pgx.Conn // nil until the first try, and after it broke
	closed      bool
	startSender sync.Once
	// gen counts the connections broken: a lock taken before the last
	// break went with it.
	gen atomic.Uint64

	// held are the locks taken on this connection and not given back,
	// counted (a session takes one lock again and again); queued, the
	// unlocks not sent yet. kick wakes their sender, which stops when done
	// closes.
	mu     sync.Mutex
	held   map[heldGroup]int
	queued []heldGroup
	kick   chan struct{}
	done   chan struct{}
}

// heldGroup is a lock taken: its name and key, and the connection's gen.
type heldGroup struct {
	name string
	key  int64
	gen  uint64
}

// init readies the locks; the sender of queued unlocks starts with the
// first connection.
func (g *groupLocks) init(log *slog.Logger, cfg *pgx.ConnConfig, retryFor time.Duration) {
	g.log, g.cfg, g.retryFor = log, cfg, retryFor
	g.sem = make(chan struct{}, 1)
	g.held = make(map[heldGroup]int)
	g.kick = make(chan struct{}, 1)
	g.done = make(chan struct{})
}

// groupLockKey maps a lock name to the advisory lock's 64-bit key; the
// prefix keeps it apart from task locks' keys.
func groupLockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("baton group lock\x00"))
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// GroupLock waits, within the store's retry bound, for the advisory lock
// named key. A try that fails (the connection broke) is made again on a
// new connection.
func (s *Store) GroupLock(ctx context.Context, key string) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, s.retryFor)
	defer cancel()
	g := &s.groupLocks
	why := errors.New("held by another server past the bound")
	for pause := groupLockFirstPause; ; pause = min(2*pause, groupLockMaxPause) {
		h, got, err := g.try(ctx, key)
		switch {
		case errors.Is(err, errStoreClosed):
			return nil, fmt.Errorf("pgstore: group lock: %w", err)
		case got && ctx.Err() != nil: // the caller left while it was taken
			g.unlock(h)
			return nil, fmt.Errorf("pgstore: group lock: %w: %w", baton.ErrUnavailable, ctx.Err())
		case got:
			return func() { g.unlock(h) }, nil
		case err != nil:
			why = err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("pgstore: group lock: %w: %w", baton.ErrUnavailable, why)
		}
	}
}

// errStoreClosed is a try's failure once the store is closed.
var errStoreClosed = errors.New("store closed")

// acquire waits for the right to use the connection.
func (g *groupLocks) acquire(ctx context.Context) error {
	select {
	case g.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// try sends the queued unlocks and tries once to take the lock named
// name, connecting first if need be. It waits for the connection as long
// as ctx lets it, but its statements run apart from ctx, within the retry
// bound: the driver closes a connection whose statement's context ends,
// and a caller that left would take every lock held on it with it.
func (g *groupLocks) try(ctx context.Context, name string) (h heldGroup, got bool, err error) {
	if err := g.acquire(ctx); err != nil {
		return h, false, err
	}
	defer func() { <-g.sem }()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.retryFor)
	defer cancel()
	if g.closed {
		return h, false, errStoreClosed
	}
	if g.conn == nil {
		if g.conn, err = pgx.ConnectConfig(ctx, g.cfg.Copy()); err != nil {
			return h, false, err
		}
		g.startSender.Do(func() { go g.sendUnlocks() })
	}
	h = heldGroup{name: name, key: groupLockKey(name), gen: g.gen.Load()}
	b := &pgx.Batch{}
	g.queueUnlocks(b)
	b.Queue(`SELECT pg_try_advisory_lock($1)`, h.key).QueryRow(func(row pgx.Row) error { return row.Scan(&got) })
	if err := g.conn.SendBatch(ctx, b).Close(); err != nil {
		g.broke(err)
		return h, false, err
	}
	if got {
		g.mu.Lock()
		g.held[h]++
		g.mu.Unlock()
	}
	return h, got, nil
}

// unlock queues the unlock of a lock still held and wakes its sender. A
// lock whose connection broke went with it, and was logged then.
func (g *groupLocks) unlock(h heldGroup) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h.gen != g.gen.Load() {
		return
	}
	g.queued = append(g.queued, h)
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// queueUnlocks moves the queued unlocks into b; the caller holds sem.
// Until b is sent they still count as held.
func (g *groupLocks) queueUnlocks(b *pgx.Batch) {
	g.mu.Lock()
	queued := g.queued
	g.queued = nil
	g.mu.Unlock()
	if len(queued) == 0 {
		return
	}
	keys := make([]int64, len(queued))
	for i, h := range queued {
		keys[i] = h.key
	}
	b.Queue(`SELECT pg_advisory_unlock(k) FROM unnest($1::bigint[]) AS k`, keys).Exec(func(pgconn.CommandTag) error {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, h := range queued {
			if g.held[h]--; g.held[h] == 0 {
				delete(g.held, h)
			}
		}
		return nil
	})
}

// sendUnlocks sends queued unlocks that no try took along, until done.
func (g *groupLocks) sendUnlocks() {
	for {
		select {
		case <-g.kick:
		case <-g.done:
			return
		}
		g.flush()
	}
}

// flush sends the queued unlocks now.
func (g *groupLocks) flush() {
	g.sem <- struct{}{} // a statement on the connection ends within its bound
	defer func() { <-g.sem }()
	if g.conn == nil {
		return // broken: its locks went with it
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.retryFor)
	defer cancel()
	b := &pgx.Batch{}
	if g.queueUnlocks(b); b.Len() == 0 {
		return
	}
	if err := g.conn.SendBatch(ctx, b).Close(); err != nil {
		g.broke(err)
	}
}

// broke closes a connection a statement failed on, which ends its session
// and every lock of it, and logs the groups whose locks were held or not
// yet given back; the caller holds sem.
func (g *groupLocks) broke(err error) {
	g.closeConn()
	g.mu.Lock()
	g.gen.Add(1)
	var groups []string
	for h := range g.held {
		groups = append(groups, h.name)
	}
	clear(g.held)
	g.queued = nil
	g.mu.Unlock()
	if len(groups) > 0 {
		g.log.Warn("pgstore: the connection holding FIFO topics' message group locks failed, and the locks held went with it: "+
			"another server's publish of one of these groups may have reached some queues between the copies of a publish made here",
			"groups", groups, "error", err)
	}
}

// closeConn closes the connection; the caller holds sem.
func (g *groupLocks) closeConn() {
	if g.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		g.conn.Close(ctx)
		g.conn = nil
	}
}

// close closes the connection for good, freeing every lock of it: later
// tries fail. Closing twice is fine.
func (g *groupLocks) close() {
	g.sem <- struct{}{}
	defer func() { <-g.sem }()
	if !g.closed {
		g.closed = true
		close(g.done)
		g.closeConn()
	}
}
