package ledger

import (
	"container/heap"
	"time"

	"github.com/baton-sqs/baton"
)

// Applying a request's event to a queue's leases: a receive begins a lease,
// a delete completes it, a visibility change renews, releases or moves it;
// a receipt of a lapsed lease is a late completion.

// removedOne ends the active lease of the message of ev, if any: an
// operator deleted or moved it without a receipt, so the lease neither
// completed nor lapsed.
func (ql *queueLedger) removedOne(ev Event) {
	tm, ok := ql.messages[ev.MessageID]
	if !ok {
		return
	}
	tm.removed = true
	if cur := tm.lease(max(tm.latest, ev.Epoch)); cur.state == leaseActive {
		ql.end(cur, leaseRemoved)
		tm.record(LeaseEvent{At: ev.At, Kind: EventRemoved, Epoch: cur.epoch})
	}
}

// begin applies a receive: a new lease ending at ev.deadline.
func (ql *queueLedger) begin(ev Event, local bool) {
	tm := ql.message(ev.MessageID)
	r := tm.lease(ev.Epoch)
	if r.received {
		if r.seeded {
			ql.seedReceived(r, ev, local)
		}
		// Applied already; told again with ClientLeft, its answer was lost
		// after it was recorded (answer.go).
		r.clientLeft = r.clientLeft || ev.ClientLeft
		return
	}
	r.received, r.local, r.begin = true, local, ev.At
	r.batch, r.batchSize, r.client, r.clientLeft = ev.Batch, ev.N, ev.Client, ev.ClientLeft
	if r.deadlineAt.IsZero() { // no renewal arrived before it
		r.deadline, r.deadlineAt, r.queueTimeout = ev.Deadline, ev.At, ev.QueueTimeout
	}
	tm.latest = max(tm.latest, ev.Epoch)
	if !ev.SentAt.IsZero() {
		tm.sentAt = ev.SentAt
	}
	ql.count(ev.At, local, func(c *counters) { c.received++ })
	tm.record(LeaseEvent{At: ev.At, Kind: EventReceive, Epoch: ev.Epoch, ReceiveCount: ev.ReceiveCount, Deadline: ev.Deadline, Client: ev.Client})
	// The store handed this lease out, so the one before it had ended:
	// lapsed (expire above saw to that), or released early by a release
	// that has not arrived yet.
	if prev := tm.leaseOf(ev.Epoch - 1); prev != nil && prev.state == leaseActive && prev.received {
		ql.end(prev, leaseReleased)
	}
	if r.state == leaseActive && r.heapIdx < 0 {
		if r.deadline.After(ev.At) {
			heap.Push(&ql.active, r)
		} else {
			r.state, r.zeroLength = leaseReleased, true // a zero-length lease: the message stayed visible
		}
	}
	ql.givenBackBeforeMove(r, ev.At, local) // given back (above, or by a release that came first) before a move
	ql.redeliver(tm, ev.Epoch)
	ql.redeliver(tm, ev.Epoch+1)
	if r.proven {
		ql.lateFound(tm, r)
	}
}

// lateFound fills in how late the late completions of r came, applied
// before the receive that told the ledger r's deadline.
func (ql *queueLedger) lateFound(tm *trackedMessage, r *leaseRec) {
	isLate := func(kind string) bool { return kind == EventLateDelete || kind == EventLateChange }
	for i := range tm.history {
		if ev := &tm.history[i]; isLate(ev.Kind) && ev.Epoch == r.epoch && ev.Late == 0 {
			ev.Late = ev.At.Sub(r.deadline)
		}
	}
	for i := range ql.recentLate {
		if lc := &ql.recentLate[i]; lc.MessageID == tm.id && lc.Epoch == r.epoch && lc.Late == 0 {
			lc.Late = lc.At.Sub(r.deadline)
		}
	}
}

// completed applies a delete by a receipt. ev.removed says the message was
// deleted: a late delete on a standard queue removes it even though another
// receiver holds it now, which ends that lease too.
func (ql *queueLedger) completed(ev Event, local bool) {
	if ql.endedUnseen(ev) {
		return
	}
	tm := ql.message(ev.MessageID)
	rec := tm.lease(ev.Epoch)
	rec.actedAt = later(rec.actedAt, ev.At)
	if ev.Result != baton.LeaseCurrent && (rec.state == leaseDeleted || rec.lateDeleted) {
		return // a retry of a delete that succeeded, or came late: nothing happened
	}
	// A delete whose earlier attempt deleted the message is the lease's
	// completion; if the lease had lapsed by the retry, when that attempt
	// came, and so how long the handler ran, is not known; on a FIFO
	// queue, which refuses a late delete, that it came in time is.
	lost := lostDelete(tm, rec, ev)
	timed := !lost || rec.state == leaseActive
	worked := ev.At // the end of the handler's time
	failedAt, failed := failedInTime(rec, ev)
	if failed {
		// Its first attempt came in time, and the store failed it
		// (unanswered.go): the handler ran to then.
		worked = failedAt
	}
	if at, ok := triedInTime(rec, ev); lost && ok {
		// Its first attempt, which the store did not answer, came then:
		// the lease ended by it, in time (unanswered.go).
		ev.At, worked, timed = at, at, true
	} else if at, ok := triedLate(rec, ev); lost && ok {
		// Its first attempt, which the store did not answer, came after
		// the lease's end, and deleted the message then: a late delete.
		ev.At, worked, ev.Result, ev.Removed, lost, timed = at, at, baton.LeaseLapsed, true, false, true
	}
	inTime := !timed && ev.FIFO
	if lost {
		ev.Result = baton.LeaseCurrent
	}
	if rec.snoozeLapsed {
		if ev.Result == baton.LeaseCurrent {
			ql.unsnooze(rec)
		} else {
			ql.snoozeOverran(rec)
		}
	} else if rec.snoozed && ev.Result == baton.LeaseCurrent {
		rec.snoozed = false // it worked on under the end it set
		tm.relabel(rec.epoch, rec.snoozeAt)
	}
	refused, gone := deleteMarks(ev)
	if rec.state == leaseReleased && rec.received {
		if !refused {
			ql.releasedDeleted(tm, rec, ev)
		}
		return
	}
	d := worked.Sub(ev.LeasedAt)
	renewed := rec.renewals > 0
	// A delete that deleted nothing completed nothing, but still tells how
	// long its handler ran: that counts in the durations the timeout is
	// sized from.
	ql.count(ev.At, local, func(c *counters) {
		switch {
		case refused:
			c.refusedDeletes++
		case gone:
			c.alreadyDeleted++
		default:
			c.completed++
		}
		if !timed {
			c.untimed++
			if inTime {
				c.untimedInTime++
			}
			return
		}
		c.addDuration(d)
		if !renewed {
			c.unrenewed.add(d)
		}
	})
	if timed {
		ql.countMillis(ev.At, d)
	}
	if ev.Result == baton.LeaseCurrent || removedInTime(rec, ev.At) {
		if rec.state == leaseExpired {
			ql.unexpire(rec)
		}
		ql.end(rec, leaseDeleted)
		tm.record(LeaseEvent{At: ev.At, Kind: EventDelete, Epoch: ev.Epoch, AlreadyDeleted: gone, Client: ev.Client})
		return
	}
	if failed {
		ql.failedDelete(tm, rec, ev, failedAt)
	} else {
		ql.late(tm, rec, ev, local, EventLateDelete)
	}
	if !ev.Removed {
		return
	}
	tm.removed = true
	// The lease that held the message when it was removed; if its receive
	// has not arrived, the record made here stops it from starting a lease
	// that would later seem to lapse.
	holder := max(tm.latest, ev.StoreEpoch)
	if holder <= ev.Epoch {
		return
	}
	if cur := tm.lease(holder); cur.state == leaseActive {
		ql.end(cur, leaseRemoved)
		tm.record(LeaseEvent{At: ev.At, Kind: EventRemoved, Epoch: cur.epoch})
	}
}

// endedUnseen says that ev, a delete or visibility change by receipt, is
// of a lease that ended before this node started, of which the ledger saw
// nothing (begun before the start, not in flight then, or it would have
// been seeded, and no later lease of its message seen since), and that
// it found its message gone, or, a release, its lease no longer live.
// Whether that receipt's own earlier attempt, made in time, did so and
// its answer was lost (a restart cuts the connections of the requests in
// flight, and the SDK retries on the restarted node), or the lease had
// lapsed, the ledger cannot tell: such a request is no late completion,
// no delete of a message already deleted, and tells no handler's time.
func (ql *queueLedger) endedUnseen(ev Event) bool {
	release := ev.Kind == KindChange && ev.Result == baton.LeaseLapsed && !ev.Deadline.After(ev.At)
	if ev.Result != baton.LeaseGone && !release || ev.LeasedAt.IsZero() || !ev.LeasedAt.Before(ql.l.started) {
		return false
	}
	tm, ok := ql.messages[ev.MessageID]
	if !ok {
		return true
	}
	r := tm.leaseOf(ev.Epoch)
	return (r == nil || !r.received) && tm.latest <= ev.Epoch
}

// lostDelete says that a delete by receipt (ev) that found its message
// already deleted had deleted it itself: an earlier attempt of the same
// delete did, and its answer was lost (answered 503 with the outcome
// unknown, and retried by the SDK; or run again by the store, whose rerun
// finds the message gone). Nobody else can have: the receipt's lease is the
// latest its message had, and the ledger holds it running, or lapsed with
// no later lease begun; an operator or a late delete by an older receipt
// would have marked the message removed, a purge or the retention sweep
// have come after its lease began or its send (removedSince: they end a
// lease as removed only if it still runs), and a later receiver begun a
// later lease.
func lostDelete(tm *trackedMessage, rec *leaseRec, ev Event) bool {
	return ev.Result == baton.LeaseGone && rec.received && tm.latest <= ev.Epoch && !tm.ql.removedSince(tm, rec) &&
		(rec.state == leaseActive || rec.state == leaseExpired)
}

// removedSince says that tm was removed other than by rec's own delete:
// by an operator or an older receipt's late delete (tm.removed), or by a
// purge or the retention sweep while rec's lease had lapsed.
func (ql *queueLedger) removedSince(tm *trackedMessage, rec *leaseRec) bool {
	return tm.removed || rec.begin.Before(ql.purgedAt) || !tm.sentAt.IsZero() && tm.sentAt.Before(ql.retainedBefore)
}

// deleteMarks says that a delete by receipt (ev) deleted nothing, and why:
// refused, a FIFO queue refusing the receipt of a lease no longer live (the
// message stays, and runs again); gone, the message was already deleted (by
// the receiver it went to after a lapse, a purge, the retention sweep, an
// operator), which SQS answers with success. Neither completed a lease.
func deleteMarks(ev Event) (refused, gone bool) {
	if ev.Kind != KindDelete {
		return false, false
	}
	return ev.Result == baton.LeaseLapsed && !ev.Removed, ev.Result == baton.LeaseGone
}

// releasedDeleted applies a delete by the receipt of a lease its holder
// had given up (a release, or a receive with VisibilityTimeout 0): the
// message was handled, but the lease was no lease of work, so its time
// counts in no lease duration, and a delete after the message was handed
// to another receiver is no late completion: the holder overran nothing.
func (ql *queueLedger) releasedDeleted(tm *trackedMessage, rec *leaseRec, ev Event) {
	if rec.lateDeleted {
		return // a retry
	}
	rec.lateDeleted = true
	_, gone := deleteMarks(ev)
	tm.record(LeaseEvent{At: ev.At, Kind: EventDelete, Epoch: ev.Epoch, AlreadyDeleted: gone, Client: ev.Client})
	if !ev.Removed {
		return
	}
	if holder := max(tm.latest, ev.StoreEpoch); holder > ev.Epoch {
		if cur := tm.lease(holder); cur.state == leaseActive {
			ql.end(cur, leaseRemoved)
			tm.record(LeaseEvent{At: ev.At, Kind: EventRemoved, Epoch: cur.epoch})
		}
	}
}

// changed applies a visibility change by a receipt.
//
// A change to now (VisibilityTimeout 0) is a release: the lease ends here.
// A change that moves the lease's end later is a renewal: the holder
// extends the time it works. A change that brings the end forward to a
// later instant (ev.shortened) is a release with a delay (a snooze, a
// back-off: "not ready, try again in N seconds") if the holder then lets
// that end come and never acts by its receipt again; but a holder may as
// well shorten its lease to go on working under a tighter one. So the
// lease runs on to its new end; if it gets there it counts as released
// then (expire), not lapsed, and the message's next receive is no
// redelivery of a holder that never came back. Should the holder act by
// the receipt afterwards, the release is taken back: a renewal if the
// lease was still current (unsnooze), a lapse while working if the
// message had been handed on (snoozeOverran). A change that gives up by
// setting a delay longer than the lease had left cannot be told from a
// heartbeat: it counts as a renewal, and the lease as lapsed at its end.
func (ql *queueLedger) changed(ev Event, local bool) {
	if ql.endedUnseen(ev) {
		return
	}
	tm := ql.message(ev.MessageID)
	rec := tm.lease(ev.Epoch)
	if !ev.Replay {
		rec.actedAt = later(rec.actedAt, ev.At)
	}
	if ev.Replay {
		// The receive again: no renewal by its holder, and a lease of
		// whoever got this answer (Event.ClientLeft), a retry being most
		// often that of a client that gave up on the first.
		if rec.received {
			rec.clientLeft = ev.ClientLeft
		}
		ql.movedBy(rec, ev)
		return
	}
	if rec.snoozeLapsed {
		if ev.Result == baton.LeaseCurrent {
			ql.unsnooze(rec)
		} else {
			ql.snoozeOverran(rec)
		}
	}
	if at, ok := retriedRelease(rec, ev); ok {
		// The release its first attempt, which the store did not answer,
		// was (unanswered.go); a change by the old receipt that went
		// through to the message's current lease moved that one too.
		if ev.Result == baton.LeaseSuperseded {
			ql.movedBy(tm.lease(ev.StoreEpoch), ev)
		}
		ev.At, ev.Deadline, ev.Result = at, at, baton.LeaseCurrent
	} else if lostRelease(tm, rec, ev) {
		ev.Result = baton.LeaseCurrent
	}
	if ev.Result == baton.LeaseSuperseded {
		// Through an older receipt to the lease of the message's current
		// receive: the older holder is late, and the current lease moves,
		// which is no renewal by its holder.
		if rec.state != leaseDeleted && !removedInTime(rec, ev.At) && (rec.state != leaseReleased || !rec.received) {
			ql.late(tm, rec, ev, local, EventLateChange)
		}
		ql.movedBy(tm.lease(ev.StoreEpoch), ev)
		return
	}
	if ev.Result != baton.LeaseCurrent {
		// After its own delete, or its message's removal, in time, or a
		// lease its holder gave up: no lapse.
		if rec.state != leaseDeleted && !removedInTime(rec, ev.At) && (rec.state != leaseReleased || !rec.received) {
			ql.late(tm, rec, ev, local, EventLateChange)
		}
		return
	}
	if rec.state == leaseExpired {
		ql.unexpire(rec)
	}
	if !ev.Deadline.After(ev.At) {
		if rec.state == leaseActive {
			ql.end(rec, leaseReleased)
		}
		if rec.snoozed {
			rec.snoozed = false
			tm.relabel(rec.epoch, rec.snoozeAt)
		}
		again := false
		if prev := tm.leaseOf(ev.Epoch - 1); !rec.releasedNow && prev != nil && prev.releasedNow {
			again = true
		}
		first := !rec.releasedNow
		rec.releasedNow = true
		ql.count(ev.At, local, func(c *counters) { c.releases++ })
		if first {
			rec.rereleased, rec.releasedAt = again, ev.At
			ql.givenBackBeforeMove(rec, ev.At, local)
		}
		tm.record(LeaseEvent{At: ev.At, Kind: EventRelease, Epoch: ev.Epoch, Client: ev.Client})
		return
	}
	kind := EventRenew
	if ev.Shortened && !ev.At.Before(rec.deadlineAt) {
		// A release with a delay, if the holder lets the new end come;
		// the lease runs until then, and expire counts the release.
		kind, rec.snoozed, rec.snoozeAt = EventRelease, true, ev.At
	} else if !ev.Shortened {
		if rec.snoozed && !ev.At.Before(rec.deadlineAt) {
			rec.snoozed = false
			tm.relabel(rec.epoch, rec.snoozeAt)
		}
		rec.renewals++
		if !ev.At.Before(rec.deadlineAt) {
			rec.progress = ev.Progress
		}
	}
	if !ev.At.Before(rec.deadlineAt) {
		rec.deadline, rec.deadlineAt, rec.queueTimeout = ev.Deadline, ev.At, false
	}
	if rec.state == leaseActive {
		if rec.heapIdx >= 0 {
			heap.Fix(&ql.active, rec.heapIdx)
		} else {
			heap.Push(&ql.active, rec)
		}
	}
	if !ev.Shortened {
		ql.count(ev.At, local, func(c *counters) { c.renewals++ })
	}
	tm.record(LeaseEvent{At: ev.At, Kind: kind, Epoch: ev.Epoch, Deadline: ev.Deadline, Client: ev.Client})
}

// lostRelease says that a release by receipt (ev) that found its lease no
// longer live had ended it itself: an earlier attempt of the same release
// did, and its answer was lost (as lostDelete's). Nobody else can have
// ended the lease early: it is the latest its message had, and the ledger
// holds it running, its end not come.
func lostRelease(tm *trackedMessage, rec *leaseRec, ev Event) bool {
	return ev.Result == baton.LeaseLapsed && !ev.Deadline.After(ev.At) && rec.received && tm.latest <= ev.Epoch &&
		rec.state == leaseActive
}

// movedBy moves the end of lease r as a change made through an older
// receipt (ev) did: the store found r live, so an expiry inferred for it is
// taken back; a release ends it.
func (ql *queueLedger) movedBy(r *leaseRec, ev Event) {
	if r.state == leaseExpired {
		ql.unexpire(r)
	}
	if !ev.Deadline.After(ev.At) {
		if r.state == leaseActive {
			ql.end(r, leaseReleased)
		}
		return
	}
	if !ev.At.Before(r.deadlineAt) {
		r.deadline, r.deadlineAt, r.queueTimeout = ev.Deadline, ev.At, false
	}
	if r.state == leaseActive {
		if r.heapIdx >= 0 {
			heap.Fix(&ql.active, r.heapIdx)
		} else {
			heap.Push(&ql.active, r)
		}
	}
}

// removedInTime says that r's message was removed (a purge, the retention
// sweep, another receiver's late delete) while r was live, and that its
// holder acts by at, before r's deadline: the store no longer has the
// message, but the holder did not overrun its lease.
func removedInTime(r *leaseRec, at time.Time) bool {
	return r.state == leaseRemoved && !r.deadline.IsZero() && !at.After(r.deadline)
}

// late records a late completion: a receipt whose lease had lapsed.
func (ql *queueLedger) late(tm *trackedMessage, rec *leaseRec, ev Event, local bool, kind string) {
	var lateBy time.Duration
	if !rec.deadline.IsZero() {
		lateBy = ev.At.Sub(rec.deadline)
	}
	// However many requests the holder makes with its receipt, its work
	// ran twice once.
	dup := ev.duplicate && !rec.duplicated
	rec.duplicated = rec.duplicated || ev.duplicate
	rec.lateDeleted = rec.lateDeleted || kind == EventLateDelete
	var worked time.Duration
	if !ev.LeasedAt.IsZero() {
		worked = ev.At.Sub(ev.LeasedAt)
	}
	first := !rec.proven
	heartbeat := ev.Kind == KindChange && ev.Result == baton.LeaseLapsed && ev.Deadline.After(ev.At)
	ql.count(ev.At, local, func(c *counters) {
		c.late++
		if heartbeat {
			c.lateRenewals++
		}
		if dup {
			c.duplicates++
		}
		if first {
			c.lateLeases++
		}
		c.lateWorked = max(c.lateWorked, worked)
		c.lastLate = later(c.lastLate, ev.At)
	})
	if first {
		rec.proven = true
		ql.working(rec)
		ql.returned(rec)
	}
	var moved time.Time // the current lease's new end, if the change went through to it
	if ev.Result == baton.LeaseSuperseded {
		moved = ev.Deadline
	}
	refused, gone := deleteMarks(ev)
	tm.record(LeaseEvent{At: ev.At, Kind: kind, Epoch: ev.Epoch, Deadline: moved, Late: lateBy, Duplicate: ev.duplicate,
		Refused: refused, AlreadyDeleted: gone, Client: ev.Client})
	if len(ql.recentLate) == maxRecentLate {
		ql.recentLate = append(ql.recentLate[:0], ql.recentLate[1:]...)
	}
	ql.recentLate = append(ql.recentLate, LateCompletion{MessageID: tm.id, At: ev.At, Kind: kind, Epoch: ev.Epoch, Late: lateBy, Duplicate: ev.duplicate,
		Refused: refused, AlreadyDeleted: gone, Client: ev.Client})
}

// deadLettered applies a message's move to its dead-letter queue.
func (ql *queueLedger) deadLettered(ev Event, local bool) {
	tm := ql.message(ev.MessageID)
	ql.end(tm.lease(ev.Epoch), leaseDeadLettered)
	ql.count(ev.At, local, func(c *counters) { c.deadLettered++ })
	tm.record(LeaseEvent{At: ev.At, Kind: EventDeadLetter, Epoch: ev.Epoch, ReceiveCount: ev.ReceiveCount})
	if prev := tm.leaseOf(ev.Epoch - 1); prev != nil {
		ql.givenBackBeforeMove(prev, ev.At, local)
	}
}

// givenBackBeforeMove counts r, if its holder gave its message straight
// back (released at once, or received with VisibilityTimeout 0) and the
// receive after it moved the message to the dead-letter queue: that lease
// counted toward maxReceiveCount with nothing done. Whichever of the two
// events arrives second counts it, once.
func (ql *queueLedger) givenBackBeforeMove(r *leaseRec, at time.Time, local bool) {
	next := r.msg.leaseOf(r.epoch + 1)
	if r.deadNext || !r.received || !(r.releasedNow || r.zeroLength) || next == nil || next.state != leaseDeadLettered {
		return
	}
	r.deadNext, r.deadAt = true, at
	ql.count(at, local, func(c *counters) { c.deadAfterRelease++ })
}

// refused applies a renewal the 12-hour ceiling refused: the lease keeps
// the end it had.
func (ql *queueLedger) refused(ev Event, local bool) {
	tm := ql.message(ev.MessageID)
	rec := tm.lease(ev.Epoch)
	rec.refusals++
	ql.count(ev.At, local, func(c *counters) {
		c.refused++
		c.lastRefused = later(c.lastRefused, ev.At)
	})
	tm.record(LeaseEvent{At: ev.At, Kind: EventRefused, Epoch: ev.Epoch, Deadline: ev.Deadline, Client: ev.Client})
}
