package ledger

import (
	"container/heap"
	"time"
)

// Leases that end without a request by their holder: a lapse inferred from
// the deadline (and taken back when a later event disproves it), a release
// with a delay that ran out, the redelivery that follows a lapse, and leases
// ended by a purge or the retention sweep.

// expire ends the active leases whose deadline has passed.
func (ql *queueLedger) expire(now time.Time) {
	for len(ql.active) > 0 && !ql.active[0].deadline.After(now) {
		r := heap.Pop(&ql.active).(*leaseRec)
		if r.snoozed {
			// Its holder set this end and let it come: a release with a
			// delay, unless it comes back (unsnooze, snoozeOverran).
			r.state, r.snoozeLapsed = leaseReleased, true
			ql.count(r.snoozeAt, r.local, func(c *counters) { c.releases++ })
			continue
		}
		r.state = leaseExpired
		ql.count(r.deadline, r.local, func(c *counters) { c.expired++ })
		r.msg.record(LeaseEvent{At: r.deadline, Kind: EventExpire, Epoch: r.epoch})
		ql.returned(r)
		ql.redeliver(r.msg, r.epoch+1)
	}
}

// unexpire takes back the expiry of r: the store said its lease was still
// current after the ledger had judged it lapsed, because a renewal made
// through another node had not arrived yet.
func (ql *queueLedger) unexpire(r *leaseRec) {
	ql.uncount(r.deadline, r.local, func(c *counters) { dec(&c.expired) })
	if next := r.msg.leaseOf(r.epoch + 1); r.redelivered && next != nil {
		ql.uncount(next.begin, next.local, func(c *counters) { dec(&c.redeliveries) })
	}
	r.redelivered = false
	if r.working {
		r.working = false
		ql.uncount(r.deadline, r.local, func(c *counters) { dec(&c.lapsedWorking) })
	}
	if r.failedAgain {
		r.failedAgain = false
		ql.uncount(r.deadline, r.local, func(c *counters) { dec(&c.failedAgain) })
	}
	if r.returned {
		r.returned = false
		ql.uncount(r.deadline, r.local, func(c *counters) { dec(&c.lapsedReturned) })
	}
	r.msg.unrecord(r.epoch)
	r.state = leaseActive
}

// redeliver notes that lease epoch of tm followed the expiry of the one
// before it, once both are known, whichever arrived first.
func (ql *queueLedger) redeliver(tm *trackedMessage, epoch uint32) {
	prev, next := tm.leaseOf(epoch-1), tm.leaseOf(epoch)
	if prev == nil || next == nil || !next.received || prev.state != leaseExpired || prev.redelivered {
		return
	}
	prev.redelivered = true
	ql.count(next.begin, next.local, func(c *counters) { c.redeliveries++ })
	ql.working(prev)
	ql.failedAgain(prev)
}

// working counts a lease that lapsed while its holder was still working:
// redelivered after its expiry, and later completed by its holder.
func (ql *queueLedger) working(r *leaseRec) {
	if r.redelivered && r.proven && !r.working {
		r.working = true
		ql.count(r.deadline, r.local, func(c *counters) { c.lapsedWorking++ })
	}
}

// failedAgain counts a lease redelivered after its lapse whose holder's
// delete, made in time, the store failed (failedDelete): its holder did
// come back, in time, so the redelivery is the store's, neither one while
// the holder worked nor one it has not come back for.
func (ql *queueLedger) failedAgain(r *leaseRec) {
	if r.redelivered && r.storeFailed && !r.failedAgain {
		r.failedAgain = true
		ql.count(r.deadline, r.local, func(c *counters) { c.failedAgain++ })
	}
}

// unsnooze takes back the release counted when r reached the end its
// holder had brought forward: the holder acted by its receipt afterwards,
// so it had not given the message up. r is active again, outside the heap,
// and the change that brought the end forward reads as a renewal.
func (ql *queueLedger) unsnooze(r *leaseRec) {
	r.snoozeLapsed, r.snoozed = false, false
	ql.uncount(r.snoozeAt, r.local, func(c *counters) { dec(&c.releases) })
	r.state = leaseActive
	r.msg.relabel(r.epoch, r.snoozeAt)
}

// snoozeOverran turns the release counted when r reached the end its
// holder had brought forward into the lapse it was: the holder came back
// late, after the message was handed on, so it was still working.
func (ql *queueLedger) snoozeOverran(r *leaseRec) {
	ql.unsnooze(r)
	r.state = leaseExpired
	ql.count(r.deadline, r.local, func(c *counters) { c.expired++ })
	r.msg.record(LeaseEvent{At: r.deadline, Kind: EventExpire, Epoch: r.epoch})
	ql.redeliver(r.msg, r.epoch+1)
}

// returned counts a lapsed lease whose holder came back late, once both
// the lapse and the late completion are known, whichever came first.
func (ql *queueLedger) returned(r *leaseRec) {
	if r.state == leaseExpired && r.proven && !r.returned {
		r.returned = true
		ql.count(r.deadline, r.local, func(c *counters) { c.lapsedReturned++ })
	}
}

// purged ends every lease still active at a purge: its message is gone
// with the purge, which is no lapse (the leases that ended before it were
// expired by expire, run before each event).
func (ql *queueLedger) purged(at time.Time) {
	ql.purgedAt = at // a lapsed lease's holder may still delete its message (lostDelete)
	for len(ql.active) > 0 {
		r := ql.active[0]
		ql.end(r, leaseRemoved)
		r.msg.record(LeaseEvent{At: at, Kind: EventRemoved, Epoch: r.epoch})
	}
}

// retained ends the active leases of the messages sent before cutoff: the
// retention sweep deleted them at at, which is no lapse.
func (ql *queueLedger) retained(at, cutoff time.Time) {
	if cutoff.After(ql.retainedBefore) {
		ql.retainedBefore = cutoff // as purgedAt
	}
	var gone []*leaseRec
	for _, r := range ql.active {
		if sent := r.msg.sentAt; !sent.IsZero() && sent.Before(cutoff) {
			gone = append(gone, r)
		}
	}
	for _, r := range gone {
		ql.end(r, leaseRemoved)
		r.msg.record(LeaseEvent{At: at, Kind: EventRemoved, Epoch: r.epoch})
	}
}

func (ql *queueLedger) end(r *leaseRec, state leaseState) {
	if r.heapIdx >= 0 {
		heap.Remove(&ql.active, r.heapIdx)
	}
	r.state = state
}
