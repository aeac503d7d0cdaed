package ledger

import (
	"cmp"
	"container/heap"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// The lease ledger watches every lease begin, renew, lapse and end (docs/architecture.md
// §3). A delete or visibility change that carries the receipt of a lease that
// had already lapsed is a late completion: the holder was still working when
// the queue gave the message away. From these events the ledger keeps, per
// queue, statistics since start and over a sliding window, and a bounded
// history per message.
//
// The ledger lives in the node's memory and starts empty but for the
// leases the store held when the node started (seed.go), seeded by the
// engine with their holders unknown. Every change to
// it is an Event; when the store is shared by several nodes (a
// baton.SharedStore), each node publishes the events it makes and applies
// the others' (bus.go), so every node's reports cover the whole cluster,
// from the moment that node started ("since start" is since this node
// started). Events of different nodes arrive in any order and a little
// late, so applying one never assumes another came first: a lease record
// may be made by any event of its lease, a receive never starts a lease
// that a delete already ended, and an expiry the ledger inferred from a
// deadline is taken back when the store is later found to have renewed or
// ended that lease in time. The counts that follow from two events (a
// redelivery, a lapse while working) are made by whichever arrives second.
//
// The rooms of the package: ledger.go (this file) holds the Ledger, its
// queues and their bounds; event.go the events and their dispatch;
// apply.go what a receive, delete or visibility change does to a lease;
// lapse.go the leases that end without their holder (lapses, delayed
// releases, purges, retention); seed.go the leases running before the
// node started; message.go a message's leases and history;
// counters.go the tallies; queries.go, observe.go and doctor.go the
// answers; bus.go the events' travel between nodes, missed.go what this
// node knows it missed of them.

const (
	windowMinutes = 15
	// maxTrackedMessages bounds the messages whose leases and history a queue
	// keeps; the least recently active are forgotten first.
	maxTrackedMessages = 20000
	// maxLedgerMessages and maxLedgerEvents bound the messages and history
	// events the ledger keeps over all queues, the least recently active
	// message of any queue forgotten first: a full queue holds about 280 MB
	// (1.28 million events of some 220 bytes), so the per-queue bound alone
	// let a client grow memory by that much with every queue it made. These
	// hold the ledger to some 600 MB however many queues there are.
	maxLedgerMessages = 200000
	maxLedgerEvents   = 2000000
	// maxLeasesPerMessage bounds the leases remembered per message.
	maxLeasesPerMessage = 16
	// maxHistory bounds the events remembered per message.
	maxHistory = 64
	// maxRecentLate bounds the late completions a queue lists.
	maxRecentLate = 50
)

type queueLedger struct {
	l *Ledger
	// recentLate keeps the latest late completions, oldest first.
	recentLate []LateCompletion
	messages   map[string]*trackedMessage
	lru        lru // of its tracked messages, most recently active at the back
	active     leaseHeap
	// total and window count what every node saw (the cluster's view when
	// the store is a LedgerBus); own counts only what this node originated:
	// the events it handled and the expiries of the leases it handed out,
	// so that summing own over the nodes counts every event once.
	total  counters
	own    counters
	window [windowMinutes]minuteCounters
	// ownExpiredShown is the most own.expired that owned has reported. An
	// expiry inferred here is taken back when a renewal or delete made
	// through another node arrives late, but owned feeds a Prometheus
	// counter, which must never go down: until own.expired passes it again,
	// owned reports this instead.
	ownExpiredShown uint64
	// seen is when each client last made a request on the queue;
	// seenPublished, when this node last told the others (holders.go).
	seen, seenPublished map[Client]time.Time
	// purgedAt is the queue's last purge, retainedBefore the latest cutoff
	// of the retention sweep: they removed every message leased before,
	// or sent before, as a lease they ended only if it still ran
	// (lostDelete).
	purgedAt, retainedBefore time.Time
}

// Ledger is one node's lease ledger. Its zero value is an empty ledger
// that no other node shares; New makes one that does when its store is
// shared.
type Ledger struct {
	// started is when the node's ledger began (reports' HistorySince).
	started time.Time
	// clock gives other nodes' events the zone of this node's own.
	clock clock.Clock
	log   *slog.Logger
	// node tells this node's batches from other nodes' on the bus;
	// publisher is nil unless the ledger has a bus.
	node       uint64
	publisher  *ledgerPublisher
	badBatches atomic.Uint64
	// missed is what this node knows it missed of the others' events
	// (missed.go).
	missed missedLog

	mu     sync.Mutex
	queues map[uint64]*queueLedger
	// lru holds every queue's tracked messages, most recently active at the
	// back; events counts their history events.
	lru    lru
	events int
	// maxMessages and maxEvents, if set, replace maxLedgerMessages and
	// maxLedgerEvents: tests lower them.
	maxMessages, maxEvents int
}

func (l *Ledger) queue(id uint64) *queueLedger {
	if l.queues == nil {
		l.queues = make(map[uint64]*queueLedger)
	}
	ql, ok := l.queues[id]
	if !ok {
		ql = &queueLedger{l: l, messages: make(map[string]*trackedMessage), lru: lru{queue: true}}
		l.queues[id] = ql
	}
	return ql
}

func (ql *queueLedger) message(id string) *trackedMessage {
	tm, ok := ql.messages[id]
	if ok {
		ql.lru.moveToBack(tm)
		ql.l.lru.moveToBack(tm)
		return tm
	}
	tm = newTrackedMessage(id, ql)
	ql.lru.pushBack(tm)
	ql.l.lru.pushBack(tm)
	ql.messages[id] = tm
	for ql.lru.n > maxTrackedMessages {
		ql.forget(ql.lru.head)
	}
	return tm
}

// forget drops a tracked message with its leases and history.
func (ql *queueLedger) forget(tm *trackedMessage) {
	ql.lru.remove(tm)
	ql.l.lru.remove(tm)
	ql.l.events -= len(tm.history)
	for _, r := range tm.leases {
		if r.heapIdx >= 0 {
			heap.Remove(&ql.active, r.heapIdx)
		}
	}
	delete(ql.messages, tm.id)
}

// trim forgets the least recently active messages of any queue while the
// ledger keeps more than its bounds. It runs after each event, so the
// messages an event works on are never forgotten under it.
func (l *Ledger) trim() {
	maxMessages, maxEvents := cmp.Or(l.maxMessages, maxLedgerMessages), cmp.Or(l.maxEvents, maxLedgerEvents)
	for l.lru.n > 0 && (l.lru.n > maxMessages || l.events > maxEvents) {
		tm := l.lru.head
		tm.ql.forget(tm)
	}
}

// lockedQueue locks the ledger and returns queue id's ledger with its
// expiries inferred up to now; the caller unlocks l.mu.
func (l *Ledger) lockedQueue(id uint64, now time.Time) *queueLedger {
	l.mu.Lock()
	ql := l.queue(id)
	ql.expire(now)
	l.trim()
	return ql
}
