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
// Trying now and then is not fair by itself: a server with a publish of
// the group waiting takes the lock again in the round trip that gives it
// back, and another server's tries would seldom find it free. So a server
// whose try finds the lock held says it waits (a shared advisory lock on
// the group's waiter key, given back once it has the lock or gives up),
// and a server that gave the lock back within groupLockYieldFor does not
// take it again while another waits: they take turns. Only a server that
// has not just held the lock says it waits, and only one that has waits
// for others, so two never wait for each other.
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

// groupLockYieldFor is how long after giving a group's lock back a server
// lets another that waits for it go first: many of the waiter's tries, on
// a loaded machine too, and a bound should the waiter hang with its
// session open.
const groupLockYieldFor = time.Second

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
	// turns is what this connection's session says of each group for
	// taking turns with the other servers (see the top of this file).
	turns map[string]*groupTurn
	// queuedWaits are the waiter keys to give back (stopWaiting), not
	// sent yet; sweepAt, how many turns are kept before a sweep;
	// yieldFor, groupLockYieldFor (a test's may be longer).
	queuedWaits []int64
	sweepAt     int
	yieldFor    time.Duration
}

// groupTurn is a group's part in taking turns: when this server last gave
// its lock back, and whether the session says it waits for it (holds its
// waiter key), from which of the connection's gens.
type groupTurn struct {
	gaveBack time.Time
	waiting  bool
	gen      uint64
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
	g.turns = make(map[string]*groupTurn)
	g.sweepAt, g.yieldFor = groupTurnsSwept, groupLockYieldFor
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

// groupWaiterKey is the advisory lock key of the group's waiters.
func groupWaiterKey(name string) int64 { return groupLockKey("waiter\x00" + name) }

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
			g.stopWaiting(key)
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
	yield, waiting := g.turnNow(h)
	var deferred bool
	var waitKeyTaken *bool
	b := &pgx.Batch{}
	g.queueUnlocks(b)
	b.Queue(tryGroupLockSQL, h.key, groupWaiterKey(name), yield, waiting).QueryRow(func(row pgx.Row) error {
		return row.Scan(&deferred, &got, &waitKeyTaken)
	})
	if err := g.conn.SendBatch(ctx, b).Close(); err != nil {
		g.broke(err)
		return h, false, err
	}
	g.tried(h, got, deferred, waitKeyTaken != nil && *waitKeyTaken)
	return h, got, nil
}

// tryGroupLockSQL tries the lock ($1) unless the server is to yield ($3)
// and another session waits for it (holds the waiter key $2 shared; a
// bigint advisory key shows in pg_locks as classid, its high half, and
// objid, its low half, with objsubid 1). Once it has the lock, the
// session no longer waits ($4: it said it did); when another holds it,
// the session says it waits. It returns whether it yielded, whether it
// got the lock, and (when another holds it) whether it took the waiter
// key.
const tryGroupLockSQL = `
WITH d AS (
	SELECT CASE WHEN $3::bool THEN EXISTS (
		SELECT 1 FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND pid <> pg_backend_pid()
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND classid = (($2::bigint >> 32) & 4294967295)::oid AND objid = ($2::bigint & 4294967295)::oid)
	ELSE false END AS deferred),
t AS (SELECT deferred, CASE WHEN deferred THEN false ELSE pg_try_advisory_lock($1) END AS got FROM d)
SELECT deferred, got, CASE
	WHEN got AND $4::bool THEN pg_advisory_unlock_shared($2)
	WHEN NOT got AND NOT deferred AND NOT $4::bool THEN pg_try_advisory_lock_shared($2)
END FROM t`

// turnNow says how a try of h's group takes its turn: whether it yields
// to a waiting server (this one gave the lock back within
// groupLockYieldFor), and whether this session says it waits.
func (g *groupLocks) turnNow(h heldGroup) (yield, waiting bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.turns[h.name]
	if t == nil || t.gen != h.gen {
		return false, false
	}
	return time.Since(t.gaveBack) < g.yieldFor, t.waiting
}

// tried notes what a try of h did: the lock taken (and the waiter key
// given back), or found held by another (the waiter key taken, and no
// more yielding: a waiter never yields, so waiters never wait for each
// other), or yielded.
func (g *groupLocks) tried(h heldGroup, got, deferred, waitKeyTaken bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h.gen != g.gen.Load() {
		return
	}
	t := g.turns[h.name]
	if t == nil || t.gen != h.gen {
		t = &groupTurn{gen: h.gen}
		g.turns[h.name] = t
	}
	switch {
	case got:
		g.held[h]++
		t.waiting = false
	case !deferred:
		t.gaveBack = time.Time{}
		t.waiting = t.waiting || waitKeyTaken
	}
}

// stopWaiting queues the waiter key of the group named name to be given
// back, if this session holds it: the caller gave up.
func (g *groupLocks) stopWaiting(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.turns[name]
	if t == nil || !t.waiting || t.gen != g.gen.Load() {
		return
	}
	t.waiting = false
	g.queuedWaits = append(g.queuedWaits, groupWaiterKey(name))
	g.kickSender()
}

// gaveBack notes that h's lock was given back now, and forgets the
// groups whose turns no longer matter, when there are many.
func (g *groupLocks) gaveBack(h heldGroup) {
	t := g.turns[h.name]
	if t == nil || t.gen != h.gen {
		t = &groupTurn{gen: h.gen}
		g.turns[h.name] = t
	}
	t.gaveBack = time.Now()
	if len(g.turns) < g.sweepAt {
		return
	}
	for name, t := range g.turns {
		if !t.waiting && time.Since(t.gaveBack) >= g.yieldFor {
			delete(g.turns, name)
		}
	}
	g.sweepAt = max(groupTurnsSwept, 2*len(g.turns))
}

// groupTurnsSwept is how many groups' turns are kept before those that no
// longer matter are forgotten.
const groupTurnsSwept = 1024

// unlock queues the unlock of a lock still held and wakes its sender. A
// lock whose connection broke went with it, and was logged then.
func (g *groupLocks) unlock(h heldGroup) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h.gen != g.gen.Load() {
		return
	}
	g.queued = append(g.queued, h)
	g.gaveBack(h)
	g.kickSender()
}

// kickSender wakes the sender of queued unlocks; the caller holds mu.
func (g *groupLocks) kickSender() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// queueUnlocks moves the queued unlocks into b; the caller holds sem.
// Until b is sent they still count as held.
func (g *groupLocks) queueUnlocks(b *pgx.Batch) {
	g.mu.Lock()
	queued, waits := g.queued, g.queuedWaits
	g.queued, g.queuedWaits = nil, nil
	g.mu.Unlock()
	if len(waits) > 0 {
		b.Queue(`SELECT pg_advisory_unlock_shared(k) FROM unnest($1::bigint[]) AS k`, waits)
	}
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
	clear(g.turns) // the session's waiter keys went with it
	g.queued, g.queuedWaits = nil, nil
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
