package ledger

import (
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
// completion, and the lease ended by it then, not by a lapse. A renewal
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
