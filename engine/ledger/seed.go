package ledger

import (
	"container/heap"
	"time"
)

// Leases taken before the node started. The ledger starts empty, but the
// store knows the messages in flight then: when each lease began, when it
// ends and its epoch, though not who holds it nor whether it was renewed.
// Seeded as running leases of an unknown holder, they are judged as any
// other (a lapse is a lapse, a late completion late, a lease held far
// beyond the p99 held), without counting as receives: they were not
// received while the node watched.

// Seed is a lease the store held when the node started: a message in
// flight, as the store lists it.
type Seed struct {
	MessageID string
	Epoch     uint32
	// LeasedAt is when the lease began (its receive); Deadline, when it
	// ends as the store has it now.
	LeasedAt, Deadline time.Time
	SentAt             time.Time
	ReceiveCount       int
}

// MaxSeeds is the most leases Seed takes for one queue: as many messages
// as a queue's ledger tracks.
const MaxSeeds = maxTrackedMessages

// Seed adds the leases running in the store at now to queue queueID's
// ledger, at most MaxSeeds of them. Each node seeds its own ledger from
// the store, so seeds are not told the other nodes; a lease the ledger
// already knows (another node's receive arrived first) is left as it is.
func (l *Ledger) Seed(queueID uint64, seeds []Seed, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.trim()
	ql := l.queue(queueID)
	for _, s := range seeds[:min(len(seeds), MaxSeeds)] {
		ql.seed(s, now)
	}
}

func (ql *queueLedger) seed(s Seed, now time.Time) {
	if !s.Deadline.After(now) || s.LeasedAt.IsZero() {
		return
	}
	if tm, ok := ql.messages[s.MessageID]; ok && (tm.latest >= s.Epoch || tm.leaseOf(s.Epoch) != nil) {
		return
	}
	tm := ql.message(s.MessageID)
	r := tm.lease(s.Epoch)
	// Its expiry is this node's to count only when no other node seeds
	// it too (owned sums over the nodes).
	r.received, r.seeded, r.local = true, true, ql.l.publisher == nil
	r.begin, r.deadline, r.deadlineAt = s.LeasedAt, s.Deadline, s.LeasedAt
	tm.latest = max(tm.latest, s.Epoch)
	tm.sentAt = s.SentAt
	// Its receive, with the end the lease has at start: whether a renewal
	// set that end is not known, and no renewal is made up.
	tm.record(LeaseEvent{At: s.LeasedAt, Kind: EventReceive, Epoch: s.Epoch, ReceiveCount: s.ReceiveCount, Deadline: s.Deadline})
	heap.Push(&ql.active, r)
}

// seedReceived applies the receive of a seeded lease, made by another
// node and arriving after the seed: the lease's holder is known now, and
// the receive counts as any.
func (ql *queueLedger) seedReceived(r *leaseRec, ev Event, local bool) {
	r.seeded, r.local = false, local
	r.batch, r.batchSize, r.client = ev.Batch, ev.N, ev.Client
	ql.count(ev.At, local, func(c *counters) { c.received++ })
}
