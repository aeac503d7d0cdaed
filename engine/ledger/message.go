package ledger

import (
	"slices"
	"time"
)

// What the ledger remembers of one message: its leases, by epoch, and its
// history of lease events; and the heap that orders a queue's running
// leases by deadline.

type leaseState int

const (
	leaseActive leaseState = iota
	leaseDeleted
	leaseReleased
	leaseExpired
	leaseDeadLettered
	leaseRemoved
)

// leaseRec is what the ledger knows of one lease. Events of several nodes
// arrive in any order, so a record may be created by any of them: received
// says whether the receive that began the lease has been seen.
type leaseRec struct {
	msg             *trackedMessage
	epoch           uint32
	begin, deadline time.Time
	// deadlineAt is when deadline was set: a renewal applied after a later
	// one does not move the deadline back. queueTimeout: it was set by a
	// receive that asked for no VisibilityTimeout (Event.QueueTimeout), so
	// the lease's length was the queue's at the time.
	deadlineAt   time.Time
	queueTimeout bool
	renewals     int
	state        leaseState
	received     bool // its receive has been applied
	local        bool // this node handed it out: its expiry is this node's to count
	redelivered  bool // a later lease followed its expiry
	proven       bool // a late completion showed its holder was working
	working      bool // counted as lapsed while working (redelivered and proven)
	failedAgain  bool // counted as redelivered after a delete the store failed (redelivered and storeFailed)
	lateDeleted  bool // a late delete by its receipt was applied: another is a retry
	duplicated   bool // counted as a duplicate execution, which it is once
	returned     bool // counted as lapsed and later proven (lapsedReturned)
	// snoozed: the last change its holder made brought its end forward,
	// at snoozeAt; snoozeLapsed: it then reached that end, counted as a
	// release with a delay (changed).
	snoozed, snoozeLapsed bool
	snoozeAt              time.Time
	releasedNow           bool // its holder released it with VisibilityTimeout 0
	// releasedAt is when it was released at once; rereleased: right after
	// its message's lease before had been (a release loop if its holder
	// went on making requests since: releaseLoops); deadNext:
	// its message was moved to the dead-letter queue at the receive after
	// it, which it had given straight back (deadAfterRelease), at deadAt.
	releasedAt, deadAt   time.Time
	rereleased, deadNext bool
	// progress: its latest renewal was made on the handler's progress
	// (Event.Progress); refusals counts its renewals the 12-hour ceiling
	// refused.
	progress bool
	refusals int
	// clientLeft: its receive's answer reached no client (Event.ClientLeft).
	clientLeft bool
	// triedAt is when its holder first asked to end it by a request the
	// store did not answer (Event.Unanswered): a delete if triedDelete,
	// else a release.
	triedAt     time.Time
	triedDelete bool
	// storeFailed: its holder's delete came in time, and the store failed
	// it without making it: the lease lapsed in the store, and the lapse
	// is the store's, not its holder's (failedInTime).
	storeFailed bool
	// actedAt is when its holder last made a request by its receipt (a
	// delete or visibility change, whatever the store found): the process
	// that received it, and the rest of its receive, was there then.
	actedAt time.Time
	// batch and batchSize are its receive's (Event.Batch, Event.N); client
	// is who received it.
	batch     uint64
	batchSize int
	// zeroLength: received with VisibilityTimeout 0, it leased nothing.
	zeroLength bool
	// seeded: it was running in the store when the node started (Seed);
	// its holder is not known, nor whether it was renewed before.
	seeded  bool
	client  Client
	heapIdx int
}

type trackedMessage struct {
	id     string
	latest uint32
	// removed: the message was deleted other than by its latest lease's
	// delete (a late delete by an older receipt on a standard queue, an
	// operator): a delete that then finds it gone found that work, not
	// its own (lostDelete; purges and the retention sweep are the queue's
	// purgedAt and retainedBefore).
	removed bool
	// sentAt is when the message was sent, as its receives said: retention
	// deletes it by that.
	sentAt time.Time
	// leases are the message's remembered leases, by epoch ascending
	// (leaseOf); history, its events in time order. Both begin in the
	// message's own arrays, which hold the one lease and the receive and
	// delete of a message handled once without further allocations.
	leases  []*leaseRec
	history []LeaseEvent
	// queueLRU links tm in its queue's lru, ledgerLRU in the ledger's; ql
	// is its queue's ledger.
	queueLRU, ledgerLRU lruLinks
	ql                  *queueLedger

	firstLease leaseRec
	leaseBuf   [1]*leaseRec
	historyBuf [2]LeaseEvent
}

// newTrackedMessage returns a message with no leases or history.
func newTrackedMessage(id string, ql *queueLedger) *trackedMessage {
	tm := &trackedMessage{id: id, ql: ql}
	tm.leases = tm.leaseBuf[:0]
	tm.history = tm.historyBuf[:0]
	return tm
}

// leaseOf returns the record of lease epoch, or nil if the ledger does not
// remember it.
func (tm *trackedMessage) leaseOf(epoch uint32) *leaseRec {
	for _, r := range tm.leases {
		if r.epoch == epoch {
			return r
		}
	}
	return nil
}

// lease returns the record of the message's lease epoch, creating it (not
// yet received, active, outside the heap) if the ledger has not seen it.
func (tm *trackedMessage) lease(epoch uint32) *leaseRec {
	if r := tm.leaseOf(epoch); r != nil {
		return r
	}
	r := &tm.firstLease
	if r.msg != nil { // taken by an earlier lease
		r = &leaseRec{}
	}
	*r = leaseRec{msg: tm, epoch: epoch, heapIdx: -1}
	i := len(tm.leases)
	for i > 0 && tm.leases[i-1].epoch > epoch {
		i--
	}
	tm.leases = slices.Insert(tm.leases, i, r)
	if epoch > maxLeasesPerMessage {
		tm.leases = slices.DeleteFunc(tm.leases, func(old *leaseRec) bool {
			return old.epoch <= epoch-maxLeasesPerMessage && old.heapIdx < 0
		})
	}
	return r
}

// record inserts ev into the history in time order; events of one instant
// keep the order they arrived in.
func (tm *trackedMessage) record(ev LeaseEvent) {
	if len(tm.history) == maxHistory {
		copy(tm.history, tm.history[1:])
		tm.history = tm.history[:maxHistory-1]
	} else {
		tm.ql.l.events++
	}
	i := len(tm.history)
	for i > 0 && tm.history[i-1].At.After(ev.At) {
		i--
	}
	tm.history = slices.Insert(tm.history, i, ev)
}

// unrecord removes the expiry of epoch from the history.
func (tm *trackedMessage) unrecord(epoch uint32) {
	n := len(tm.history)
	tm.history = slices.DeleteFunc(tm.history, func(ev LeaseEvent) bool {
		return ev.Kind == EventExpire && ev.Epoch == epoch
	})
	tm.ql.l.events -= n - len(tm.history)
}

// relabel makes the release with a delay recorded for epoch at at a
// renewal: its holder kept the lease after all.
func (tm *trackedMessage) relabel(epoch uint32, at time.Time) {
	for i := range tm.history {
		if ev := &tm.history[i]; ev.Kind == EventRelease && ev.Epoch == epoch && ev.At.Equal(at) {
			ev.Kind = EventRenew
		}
	}
}

// leaseHeap orders active leases by deadline.
type leaseHeap []*leaseRec

func (h leaseHeap) Len() int           { return len(h) }
func (h leaseHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h leaseHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}

func (h *leaseHeap) Push(x any) {
	r := x.(*leaseRec)
	r.heapIdx = len(*h)
	*h = append(*h, r)
}

func (h *leaseHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	r.heapIdx = -1
	return r
}
