package pgstore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-sqs/baton"
)

// Group commit. Sends to standard queues, deletes and visibility changes
// (single or batched), and receives from standard queues without message
// groups are not run by the request that makes them: they
// queue as ops, and a few committer goroutines each take everything queued
// when they are free and run it as one round, a handful of statements that
// each act on every op's rows (commitRound) in one transaction and one
// round trip. Under load a round holds many requests, which share its
// commit (its WAL flush) and its statements' fixed costs.
//
// Every request keeps its own answer. A round's results are spread back to
// its ops, and a round that fails for a reason not transient (a send to a
// queue deleted meanwhile, say) fails no one: each of its ops runs again
// alone, where it fails or succeeds as it would have without company. A
// transient failure goes back to every op of the round, and each request
// retries it as retry.go says, within its own bound and deadline, by
// queuing again; one that learns that its op's outcome is unknown treats it
// as it would alone (a rerun send meets its own messages' unique key).

// committers is how many rounds one server runs at once. While one round
// waits for its commit, requests queue for the next; a second committer
// starts it then, so the database has a round to work on while the other's
// commit is flushed. More would make rounds smaller, and each costs the
// database CPU of its own: on 2 cores, 1 to 3 committers served about as
// many requests, 6 fewer.
const committers = 2

// Bounds of one round, so that one statement's arrays stay of a sensible
// size: entries are messages sent plus receipts deleted or changed.
const (
	maxRoundEntries = 1000
	maxRoundBytes   = 8 << 20 // of message bodies
)

// gatherYields is how often a committer yields its processor before it
// takes the queued ops, when its last round held more than one: on a machine
// with few cores the requests that would join are mostly runnable goroutines
// about to queue their ops. A lone request (last round of one) never waits.
const gatherYields = 3

// roundTimeout bounds a round whose ops have no deadline (they all have
// one: their operation's bound, retry.go). A round ends at the latest of
// its ops' deadlines: one that the database does not answer by then (a
// connection that hangs rather than breaks) fails, and its ops learn that
// the outcome is unknown.
const roundTimeout = 15 * time.Second

// errAlone tells an op that its round failed for a reason that is not
// transient, so that it must run alone to learn its own answer.
var errAlone = errors.New("pgstore: round failed; run alone")

// errStalled is the failure of a run the database did not answer within
// its bound: transient, its outcome unknown (retry.go).
var errStalled = errors.New("database did not answer in time")

// opKind is what an op does.
type opKind int

const (
	opSend opKind = iota
	opDelete
	opChange
	opReceive // a standard queue's receive without message groups (receiveround.go)
)

// leaseEntry is one receipt of a delete or a visibility change.
type leaseEntry struct {
	MessageID string
	Epoch     uint32
	// VisibleAt is a visibility change's new lease end.
	VisibleAt time.Time
}

// leaseRow is what a lease statement found and did for one entry.
type leaseRow struct {
	msg *baton.Message // nil if the message was gone
	// live: the receipt's lease was live; changed: the statement acted
	// (deleted, or moved the lease's end); released: a visibility change
	// made the message visible at once.
	live, changed, released bool
}

// op is one request's share of a round.
type op struct {
	ctx     context.Context
	kind    opKind
	queueID uint64
	// sends: a standard queue's messages, stored together.
	msgs []*baton.Message
	// deletes and visibility changes: the receipts, acted on in order, at
	// now; requireLive (deletes), anyLease and unreceive (changes) as in
	// the store's parameters.
	entries     []leaseEntry
	now         time.Time
	requireLive bool
	anyLease    bool
	unreceive   bool
	// payload: the outcomes' messages carry their payload (a single
	// delete's or change's; a batch's need not).
	payload bool
	// receives: at most max messages, leased until visibleAt, none sent
	// before cutoff (now is the receive's).
	max               int
	visibleAt, cutoff time.Time

	// Results, set by the round that ran it (commitRound): rows, one per
	// entry.
	rows []leaseRow
	// leased: a receive's messages, as leased, in pos order; notPlain: the
	// round found its queue gone or holding messages with a group id, and
	// leased nothing (receiveManySQL).
	leased   []*baton.Message
	notPlain bool

	err  error
	done chan struct{}
}

// size is the op's entries and body bytes, for the round's bounds.
func (o *op) size() (entries, bytes int) {
	for _, m := range o.msgs {
		bytes += len(m.Body)
	}
	return len(o.msgs) + len(o.entries) + o.max, bytes
}

// grouper gathers ops into rounds.
type grouper struct {
	s       *Store
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []*op
	closing bool
	// last is how many ops the last round taken held.
	last int
	wg   sync.WaitGroup

	// rounds and ops count the rounds run and the ops they held.
	rounds, ops atomic.Int64

	// held, set by tests, keeps the committers from taking ops.
	held bool
}

func (g *grouper) init(s *Store) {
	g.s = s
	g.cond = sync.NewCond(&g.mu)
	for range committers {
		g.wg.Add(1)
		go g.run()
	}
}

// stop runs what is queued, then ends the committers.
func (g *grouper) stop() {
	g.mu.Lock()
	g.closing = true
	g.cond.Broadcast()
	g.mu.Unlock()
	g.wg.Wait()
}

// commit runs o in a round and returns its error; o's results are set when
// it is nil. It waits at most until ctx ends: o then may or may not run.
func (g *grouper) commit(ctx context.Context, o *op) error {
	o.ctx, o.done, o.err = ctx, make(chan struct{}), nil
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		return errors.New("pgstore: store closed")
	}
	g.queue = append(g.queue, o)
	g.cond.Signal()
	g.mu.Unlock()
	select {
	case <-o.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if errors.Is(o.err, errAlone) {
		return g.s.commitRound(ctx, []*op{o})
	}
	return o.err
}

// run is a committer: it takes the queued ops, as many as a round holds,
// runs them and answers them, until stop.
func (g *grouper) run() {
	defer g.wg.Done()
	for {
		ops := g.take()
		if ops == nil {
			return
		}
		g.finish(ops)
	}
}

// take waits for queued ops and takes those of the next round, or returns
// nil once the grouper stops with nothing queued.
func (g *grouper) take() []*op {
	g.mu.Lock()
	defer g.mu.Unlock()
	for (len(g.queue) == 0 || g.held) && !g.closing {
		g.cond.Wait()
	}
	if len(g.queue) == 0 {
		return nil
	}
	if g.last > 1 && !g.closing {
		g.mu.Unlock()
		for range gatherYields {
			runtime.Gosched()
		}
		g.mu.Lock()
		if len(g.queue) == 0 { // another committer took them
			g.last = 0
			return []*op{}
		}
	}
	n, entries, bytes := 0, 0, 0
	for n < len(g.queue) {
		e, b := g.queue[n].size()
		if n > 0 && (entries+e > maxRoundEntries || bytes+b > maxRoundBytes) {
			break
		}
		n, entries, bytes = n+1, entries+e, bytes+b
	}
	ops := make([]*op, n)
	copy(ops, g.queue)
	g.queue = append(g.queue[:0], g.queue[n:]...)
	if len(g.queue) > 0 {
		g.cond.Signal() // more than a round's worth: another committer starts
	}
	g.last = n
	return ops
}

// finish runs ops as one round, leaving out those whose callers have left,
// and answers each.
func (g *grouper) finish(ops []*op) {
	live := ops[:0]
	for _, o := range ops {
		if err := o.ctx.Err(); err != nil {
			o.err = err
			close(o.done)
			continue
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return
	}
	g.rounds.Add(1)
	g.ops.Add(int64(len(live)))
	ctx, cancel := context.WithDeadline(context.Background(), roundDeadline(live))
	err := g.s.commitRound(ctx, live)
	if err == nil {
		err = g.s.fault("round")
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w: %w", errStalled, err)
	}
	cancel()
	if _, again := transient(err); err != nil && !again && len(live) > 1 {
		err = errAlone
	}
	for _, o := range live {
		o.err = err
		close(o.done)
	}
}

// roundDeadline is the latest of the ops' deadlines, or roundTimeout from
// now if one has none.
func roundDeadline(ops []*op) time.Time {
	var latest time.Time
	for _, o := range ops {
		dl, ok := o.ctx.Deadline()
		if !ok {
			return time.Now().Add(roundTimeout)
		}
		if dl.After(latest) {
			latest = dl
		}
	}
	return latest
}
