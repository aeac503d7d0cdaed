package ledger

import (
	"fmt"
	"time"

	"github.com/baton-sqs/baton"
)

// Requests by receipt that the store did not answer. A delete or release
// (ChangeMessageVisibility 0) that the store failed, answered 503 (not
// made, or made with its outcome unknown: the database failed over
// between its commit and its answer), is retried by the SDK, perhaps only
// after the lease's end, once the store is back: the retry then finds the
// lease ended, by the first attempt or by its lapse. Its holder asked in
// time all the same. So the node that answered 503 says so
// (Event.Unanswered), and a retry that finds its lease ended is read as
// made when its first such attempt was: within the lease, it is no late
// completion, and the lease ended by it then, not by a lapse. A delete
// retried so that finds the lease lapsed and the message still there, or
// deleted by a receiver the store handed it to after the lapse, shows the
// store had not made that attempt: the lease did lapse, but
// by the store's failure, not its holder's (failedInTime); one whose
// first attempt came after the lease's end is late by that attempt's
// time (triedLate). A renewal
// whose answer was lost is not noted: its retry finds the lease it
// extended still running, or, if the store never made it, a lease that
// did lapse.

// unanswered notes on its lease a delete or release the store did not
// answer (ev), the first of them kept.
func (ql *queueLedger) unanswered(ev Event) {
	tm, ok := ql.messages[ev.MessageID]
	if !ok {
		return // a lease the ledger does not know: begun before the start
	}
	r, del := tm.leaseOf(ev.Epoch), ev.Deadline.IsZero()
	if r == nil || !del && ev.Deadline.After(ev.At) {
		return
	}
	r.actedAt = later(r.actedAt, ev.At)
	if r.triedAt.IsZero() || ev.At.Before(r.triedAt) {
		r.triedAt, r.triedDelete = ev.At, del
	}
}

// triedInTime returns when the first attempt the store did not answer to
// end r as ev does (a delete, or a release) came, if it came within r's
// lease: ev is its retry.
func triedInTime(r *leaseRec, ev Event) (time.Time, bool) {
	if r.triedAt.IsZero() || r.triedDelete != (ev.Kind == KindDelete) || r.deadline.IsZero() || r.triedAt.After(r.deadline) {
		return time.Time{}, false
	}
	return r.triedAt, true
}

// retriedRelease says that ev, a release that found its lease r no longer
// live, is the retry of one the store did not answer, made within the
// lease, and returns when that was. The lease is held lapsed, the latest
// of its message or handed on after its end: the first attempt released
// it, or its message waited to the end, but its holder let go in time.
// (One that still runs in the ledger is lostRelease's; one the next
// receive ended early was released, as the store's handing it on shows.)
func retriedRelease(r *leaseRec, ev Event) (time.Time, bool) {
	if ev.Kind != KindChange || ev.Deadline.After(ev.At) || ev.Result == baton.LeaseCurrent || r.state != leaseExpired {
		return time.Time{}, false
	}
	return triedInTime(r, ev)
}

// failedInTime returns when the first attempt of ev, a delete that found
// its lease r lapsed, came, if the store failed that attempt within the
// lease: the store had not made it, as the retry shows by finding the
// message still there (on a standard queue it deletes it now, on a FIFO
// queue it is refused), or gone with a later lease of it begun (the store
// handed the message out after that attempt, so it had not deleted it: the
// receiver it went to deleted it). The holder deleted in time; the lease
// lapsed in the store because the store failed, and its message could be
// received again until the retry.
func failedInTime(r *leaseRec, ev Event) (time.Time, bool) {
	if ev.Kind != KindDelete || r.state != leaseExpired {
		return time.Time{}, false
	}
	if ev.Result != baton.LeaseLapsed && (ev.Result != baton.LeaseGone || r.msg.latest <= r.epoch) {
		return time.Time{}, false
	}
	return triedInTime(r, ev)
}

// triedLate returns when the first attempt of ev, a delete that found its
// message gone, its lease r having lapsed, came, if that attempt came
// after the lease's end on a standard queue: it deleted the message then,
// late (its answer lost), and ev is its retry. (A FIFO queue refuses a
// late delete: the attempt deleted nothing.)
func triedLate(r *leaseRec, ev Event) (time.Time, bool) {
	if ev.Kind != KindDelete || ev.FIFO || !r.triedDelete || r.deadline.IsZero() || !r.triedAt.After(r.deadline) {
		return time.Time{}, false
	}
	return r.triedAt, true
}

// failedDelete records ev, a delete whose first attempt, at, came within
// its lease r and was failed by the store (failedInTime): no late
// completion, and r's lapse is the store's (lapses.storeFailed), not its
// holder's. The delete is as the store made it at the retry: on a
// standard queue it removes the message, on a FIFO queue it is refused.
func (ql *queueLedger) failedDelete(tm *trackedMessage, r *leaseRec, ev Event, local bool, at time.Time) {
	r.storeFailed, r.lateDeleted = true, true
	ql.failedAgain(r)
	if ev.duplicate && !r.duplicated {
		// The message was received again before the retry: its work ran
		// twice, once by this holder.
		r.duplicated = true
		ql.count(ev.At, local, func(c *counters) { c.duplicates++; c.failedDuplicates++ })
	}
	refused, gone := deleteMarks(ev)
	tm.record(LeaseEvent{At: ev.At, Kind: EventDelete, Epoch: ev.Epoch, Refused: refused, AlreadyDeleted: gone,
		StoreFailedAt: at, Duplicate: ev.duplicate, Client: ev.Client})
}

// storeFailedFinding names the leases that lapsed because the store failed
// their holder's delete, made in time (failedDelete): the cause is the
// store's outage, not the handler nor the lease's length. Fewer than
// MinFindingLeases are a note, and the queue too-few-leases, not healthy.
func (d *doctor) storeFailedFinding() {
	sf := d.lapses.storeFailed
	if sf.n == 0 {
		return
	}
	what := fmt.Sprintf("%s lapsed though %s deleted %s in time: the store failed the delete (answered 503; "+
		"the retry, after the lease's end, found the lease lapsed and the message still there or received again since, so the first attempt was not made), "+
		"so the message could be received again until the retry (%d received again); no handler failed and no lease was too short",
		either(sf.n == 1, "1 lease", fmt.Sprintf("%d leases", sf.n)), either(sf.n == 1, "its holder", "their holders"),
		either(sf.n == 1, "its message", "their messages"), sf.again)
	fix := "The cause is the store's failure when the deletes came: its outage shows in the server's log and health " +
		"(a database failing over, a disk failing). Messages received again were worked twice: the consumers' idempotency covers that."
	if sf.n < MinFindingLeases {
		d.tooFew = true // a failure all the same: not healthy
		d.notes = append(d.notes, what+". "+fix)
		return
	}
	d.r.Findings = append(d.r.Findings, Finding{Kind: DiagnosisStoreFailed, Leases: sf.n,
		Evidence: fmt.Sprintf("%s (messages %s).", what, idsText(sf.msgs)), Fix: fix})
}
