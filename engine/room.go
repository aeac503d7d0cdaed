package engine

import (
	"context"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
)

// Every receive must know that its queue is under the in-flight limit, and
// counting the queue's in-flight messages is a query of its own on a
// database-backed store. A receive therefore skips the count when the
// node counted lately, and what it counted plus every message this node
// leased since leaves half the limit free.
//
// On a single node that sum bounds the in-flight count from above: only a
// receive puts a message in flight, and every receive on the node adds what
// it leased, while deletes, releases and lapsed leases only lower the
// count. A skipped count would so have been under the limit too, and every
// answer is the one a count would give. On a shared store the other nodes'
// leases since the count are unknown; they would need to lease half the
// limit (60,000 messages) within roomFresh for a receive here to pass the
// limit unseen. The limit is approximate across nodes anyway: two nodes
// that count at once both lease.

// roomFresh is how long a count of a queue's in-flight messages lets its
// receives skip counting.
const roomFresh = time.Second

// When a count goes stale under load, every receive that arrives before a
// new count ends would count too: a node's concurrent receives made
// several counts a second where one would do, each a scan of the queue's
// in-flight index entries on the PostgreSQL store. A receive that finds a
// count running waits for it and judges with its result, counting itself
// only if the queue is not roomy by it either.

// roomNote is what a node knows of a queue's in-flight messages: leases
// is how many it ever leased from the queue; inFlight is its last count, at
// (engine clock), taken when leases was base. A lease that commits while a
// count runs is either seen by the count or added after base, or both,
// never neither: a receive adds its leases after they commit, and a count
// reads leases before it starts.
type roomNote struct {
	leases, base, inFlight int
	at                     time.Time
	// counts is how many counts of the queue run now; ended is closed
	// when the last of them ends (nil while none runs); waiting is how
	// many receives wait for it.
	counts, waiting int
	ended           chan struct{}
}

// roomNotes are the queues' roomNotes.
type roomNotes struct {
	mu    sync.Mutex
	notes map[uint64]*roomNote
}

// note returns the queue's note, made if missing; r.mu is held.
func (r *roomNotes) note(queueID uint64) *roomNote {
	if r.notes == nil {
		r.notes = make(map[uint64]*roomNote)
	}
	n := r.notes[queueID]
	if n == nil {
		n = &roomNote{}
		r.notes[queueID] = n
	}
	return n
}

// roomy reports whether a receive of the queue at now may skip counting
// its in-flight messages: a count of the last roomFresh, plus the leases
// since, is below half of limit.
func (r *roomNotes) roomy(queueID uint64, now time.Time, limit int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.notes[queueID]
	return n != nil && !n.at.IsZero() && !now.Before(n.at) && now.Sub(n.at) < roomFresh &&
		n.inFlight+n.leases-n.base < limit/2
}

// awaitCount waits until no count of the queue runs, or ctx ends, and
// reports whether a count was running.
func (r *roomNotes) awaitCount(ctx context.Context, queueID uint64) bool {
	r.mu.Lock()
	n := r.note(queueID)
	ended := n.ended
	if ended != nil {
		n.waiting++
	}
	r.mu.Unlock()
	if ended == nil {
		return false
	}
	select {
	case <-ended:
	case <-ctx.Done():
	}
	r.mu.Lock()
	n.waiting--
	r.mu.Unlock()
	return true
}

// waiters is how many receives wait for a count of the queue to end.
func (r *roomNotes) waiters(queueID uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.note(queueID).waiting
}

// counting notes that a count of the queue starts now and returns what to
// pass to counted once it ends; done must be called then, whatever the
// count's outcome.
func (r *roomNotes) counting(queueID uint64) (base int, done func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.note(queueID)
	if n.counts == 0 {
		n.ended = make(chan struct{})
	}
	n.counts++
	return n.leases, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if n.counts--; n.counts == 0 {
			close(n.ended)
			n.ended = nil
		}
	}
}

// counted notes an in-flight count of the queue taken at now, which began
// when its leases were base (counting).
func (r *roomNotes) counted(queueID uint64, now time.Time, base, inFlight int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.note(queueID)
	n.at, n.base, n.inFlight = now, base, inFlight
}

// leased adds n messages leased from the queue to its note.
func (r *roomNotes) leased(queueID uint64, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note(queueID).leases += n
}

// forget drops the queue's note (the queue was deleted).
func (r *roomNotes) forget(queueID uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.notes, queueID)
}

// lease is the store's MessageReceive, which notes in e.room what it
// leased: every lease of the engine goes through it. A receive that failed
// may have leased p.Max messages first.
func (e *Engine) lease(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	// The lease is made whatever the client does meanwhile: a store may
	// write a lease after its call has answered the client's cancelled
	// context (the embedded store's change stays queued), and the message
	// would then be leased to nobody with the ledger never told. The
	// store's own bound (the write timeout) ends the wait.
	msgs, err := e.store.MessageReceive(context.WithoutCancel(ctx), p)
	n := len(msgs)
	if err != nil {
		n = p.Max
	}
	e.room.leased(p.QueueID, n)
	return msgs, err
}
