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
	ql.endRemoved(tm.lease(max(tm.latest, ev.Epoch)), ev.At)
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
	t := deleteTimes(tm, rec, &ev)
	if !ql.snoozeSettled(rec, ev.Result) && rec.snoozed && ev.Result == baton.LeaseCurrent {
		workedUnder(rec) // it worked on under the end it set
	}
	if refused, _ := deleteMarks(ev); rec.state == leaseReleased && rec.received {
		if !refused {
			ql.releasedDeleted(tm, rec, ev)
		}
		return
	}
	ql.countDelete(rec, ev, t, local)
	if ev.Result == baton.LeaseCurrent || removedInTime(rec, ev.At) {
		ql.deletedInTime(tm, rec, ev)
		return
	}
	if t.failed {
		ql.failedDelete(tm, rec, ev, local, t.failedAt)
	} else {
		ql.late(tm, rec, ev, local, EventLateDelete)
	}
	if ev.Removed {
		tm.removed = true
		ql.removeHolder(tm, ev)
	}
}

// deleteTime is what a delete by receipt tells of its handler's time.
type deleteTime struct {
	worked   time.Time // the end of the handler's time
	timed    bool      // whether that end is known
	inTime   bool      // not timed, but known to have come within the lease (a FIFO queue)
	failed   bool      // its first attempt came in time and the store failed it
	failedAt time.Time // when that attempt came
}

// deleteTimes says when the handler behind a delete by receipt (*ev) ended,
// and makes *ev the attempt that ended its lease. A delete whose earlier
// attempt deleted the message is the lease's completion; if the lease had
// lapsed by the retry, when that attempt came, and so how long the handler
// ran, is not known; on a FIFO queue, which refuses a late delete, that it
// came in time is.
func deleteTimes(tm *trackedMessage, rec *leaseRec, ev *Event) deleteTime {
	lost := lostDelete(tm, rec, *ev)
	t := deleteTime{worked: ev.At, timed: !lost || rec.state == leaseActive}
	t.failedAt, t.failed = failedInTime(rec, *ev)
	if t.failed {
		// Its first attempt came in time, and the store failed it
		// (unanswered.go): the handler ran to then.
		t.worked = t.failedAt
	}
	if at, ok := triedInTime(rec, *ev); lost && ok {
		// Its first attempt, which the store did not answer, came then:
		// the lease ended by it, in time (unanswered.go).
		ev.At, t.worked, t.timed = at, at, true
	} else if at, ok := triedLate(rec, *ev); lost && ok {
		// Its first attempt, which the store did not answer, came after
		// the lease's end, and deleted the message then: a late delete.
		ev.At, t.worked, ev.Result, ev.Removed, lost, t.timed = at, at, baton.LeaseLapsed, true, false, true
	}
	t.inTime = !t.timed && ev.FIFO
	if lost {
		ev.Result = baton.LeaseCurrent
	}
	return t
}

// countDelete counts a delete by receipt (ev) of rec: a completion, or a
// delete refused or of a message already deleted. One that deleted nothing
// completed nothing, but still tells how long its handler ran: that counts
// in the durations the timeout is sized from.
func (ql *queueLedger) countDelete(rec *leaseRec, ev Event, t deleteTime, local bool) {
	refused, gone := deleteMarks(ev)
	d := t.worked.Sub(ev.LeasedAt)
	renewed := rec.renewals > 0
	ql.count(ev.At, local, func(c *counters) {
		switch {
		case refused:
			c.refusedDeletes++
		case gone:
			c.alreadyDeleted++
		default:
			c.completed++
		}
		if !t.timed {
			c.untimed++
			if t.inTime {
				c.untimedInTime++
			}
			return
		}
		c.addDuration(d)
		if !renewed {
			c.unrenewed.add(d)
		}
	})
	if t.timed {
		ql.countMillis(ev.At, d)
	}
}

// deletedInTime ends rec, deleted by its holder (ev) while it was live, or
// after its message's removal within it.
func (ql *queueLedger) deletedInTime(tm *trackedMessage, rec *leaseRec, ev Event) {
	if rec.state == leaseExpired {
		ql.unexpire(rec)
	}
	ql.end(rec, leaseDeleted)
	_, gone := deleteMarks(ev)
	tm.record(LeaseEvent{At: ev.At, Kind: EventDelete, Epoch: ev.Epoch, AlreadyDeleted: gone, Client: ev.Client})
}

// removeHolder ends, as removed, the lease that held tm when a delete by an
// older receipt (ev) removed it. If that lease's receive has not arrived,
// the record made here stops it from starting a lease that would later
// seem to lapse.
func (ql *queueLedger) removeHolder(tm *trackedMessage, ev Event) {
	if holder := max(tm.latest, ev.StoreEpoch); holder > ev.Epoch {
		ql.endRemoved(tm.lease(holder), ev.At)
	}
}

// endRemoved ends r, if it still runs, as removed at at: its message was
// removed under it, so it neither completed nor lapsed.
func (ql *queueLedger) endRemoved(r *leaseRec, at time.Time) {
	if r.state == leaseActive {
		ql.end(r, leaseRemoved)
		r.msg.record(LeaseEvent{At: at, Kind: EventRemoved, Epoch: r.epoch})
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
	if ev.Removed {
		ql.removeHolder(tm, ev)
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
	if ev.Replay {
		ql.replayed(rec, ev)
		return
	}
	rec.actedAt = later(rec.actedAt, ev.At)
	ql.snoozeSettled(rec, ev.Result)
	ev = ql.retriedChange(tm, rec, ev)
	if ev.Result != baton.LeaseCurrent {
		ql.changedLate(tm, rec, ev, local)
		return
	}
	if rec.state == leaseExpired {
		ql.unexpire(rec)
	}
	if !ev.Deadline.After(ev.At) {
		ql.released(tm, rec, ev, local)
		return
	}
	ql.renewed(tm, rec, ev, local)
}

// replayed applies a FIFO receive retried with its ReceiveRequestAttemptId
// (ev): no renewal by its holder, and a lease of whoever got this answer
// (Event.ClientLeft), a retry being most often that of a client that gave
// up on the first.
func (ql *queueLedger) replayed(rec *leaseRec, ev Event) {
	if rec.received {
		rec.clientLeft = ev.ClientLeft
	}
	ql.movedBy(rec, ev)
}

// snoozeSettled settles rec's release with a delay whose end came (its
// holder acted by its receipt after it): a renewal if its lease was still
// current (result), a lapse while working if not. It says whether there
// was such a release.
func (ql *queueLedger) snoozeSettled(rec *leaseRec, result baton.LeaseResult) bool {
	if !rec.snoozeLapsed {
		return false
	}
	if result == baton.LeaseCurrent {
		ql.unsnooze(rec)
	} else {
		ql.snoozeOverran(rec)
	}
	return true
}

// workedUnder makes rec's release with a delay, its end not come, a
// renewal: its holder acted by its receipt, so it went on working.
func workedUnder(rec *leaseRec) {
	rec.snoozed = false
	rec.msg.relabel(rec.epoch, rec.snoozeAt)
}

// retriedChange reads a change by receipt (ev) that found its lease no
// longer live as the release its first attempt was, where the store did
// not answer that attempt (unanswered.go), and returns it so.
func (ql *queueLedger) retriedChange(tm *trackedMessage, rec *leaseRec, ev Event) Event {
	if at, ok := retriedRelease(rec, ev); ok {
		// A change by the old receipt that went through to the message's
		// current lease moved that one too.
		if ev.Result == baton.LeaseSuperseded {
			ql.movedBy(tm.lease(ev.StoreEpoch), ev)
		}
		ev.At, ev.Deadline, ev.Result = at, at, baton.LeaseCurrent
	} else if lostRelease(tm, rec, ev) {
		ev.Result = baton.LeaseCurrent
	}
	return ev
}

// changedLate applies a change by a receipt whose lease was no longer
// live: a late completion, unless it came after the lease's own delete,
// its message's removal in time, or its holder giving it up. One through
// an older receipt to the lease of the message's current receive
// (superseded) moves that lease too, which is no renewal by its holder.
func (ql *queueLedger) changedLate(tm *trackedMessage, rec *leaseRec, ev Event, local bool) {
	if rec.state != leaseDeleted && !removedInTime(rec, ev.At) && (rec.state != leaseReleased || !rec.received) {
		ql.late(tm, rec, ev, local, EventLateChange)
	}
	if ev.Result == baton.LeaseSuperseded {
		ql.movedBy(tm.lease(ev.StoreEpoch), ev)
	}
}

// released applies a release (a change to now) of rec, live: its lease
// ends here. A release right after the message's lease before was
// released too is counted as a release again (the release loop).
func (ql *queueLedger) released(tm *trackedMessage, rec *leaseRec, ev Event, local bool) {
	if rec.state == leaseActive {
		ql.end(rec, leaseReleased)
	}
	if rec.snoozed {
		workedUnder(rec)
	}
	first := !rec.releasedNow
	prev := tm.leaseOf(ev.Epoch - 1)
	again := first && prev != nil && prev.releasedNow
	rec.releasedNow = true
	ql.count(ev.At, local, func(c *counters) { c.releases++ })
	if first {
		rec.rereleased, rec.releasedAt = again, ev.At
		ql.givenBackBeforeMove(rec, ev.At, local)
	}
	tm.record(LeaseEvent{At: ev.At, Kind: EventRelease, Epoch: ev.Epoch, Client: ev.Client})
}

// renewed applies a change of rec, live, to a later instant: a renewal, or
// a release with a delay if it brings the end forward (changed). A change
// that arrives after a later one was applied moves no end.
func (ql *queueLedger) renewed(tm *trackedMessage, rec *leaseRec, ev Event, local bool) {
	newest := !ev.At.Before(rec.deadlineAt)
	kind := EventRenew
	if ev.Shortened && newest {
		// A release with a delay, if the holder lets the new end come;
		// the lease runs until then, and expire counts the release.
		kind, rec.snoozed, rec.snoozeAt = EventRelease, true, ev.At
	} else if !ev.Shortened {
		if rec.snoozed && newest {
			workedUnder(rec)
		}
		rec.renewals++
		if newest {
			rec.progress = ev.Progress
		}
	}
	if newest {
		rec.deadline, rec.deadlineAt, rec.queueTimeout = ev.Deadline, ev.At, false
	}
	ql.reschedule(rec)
	if !ev.Shortened {
		ql.count(ev.At, local, func(c *counters) { c.renewals++ })
	}
	tm.record(LeaseEvent{At: ev.At, Kind: kind, Epoch: ev.Epoch, Deadline: ev.Deadline, Client: ev.Client})
}

// reschedule puts r, if it still runs, in its place among the running
// leases by its (new) end.
func (ql *queueLedger) reschedule(r *leaseRec) {
	if r.state != leaseActive {
		return
	}
	if r.heapIdx >= 0 {
		heap.Fix(&ql.active, r.heapIdx)
	} else {
		heap.Push(&ql.active, r)
	}
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
	ql.reschedule(r)
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
