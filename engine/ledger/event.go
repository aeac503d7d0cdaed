package ledger

import (
	"time"

	"github.com/baton-sqs/baton"
)

// The events that change the ledger, and how each is dispatched to the
// queue it concerns (apply.go, lapse.go).

// EventKind is what an Event reports.
type EventKind uint8

const (
	KindSent EventKind = iota + 1
	KindReceive
	KindChange
	KindDelete
	KindDeadLetter
	KindForget
	// KindPurge ends the queue's active leases: their messages were purged.
	KindPurge
	// KindRetention ends the active leases of the messages sent before
	// sentAt: the retention sweep deleted them.
	KindRetention
	// KindRemove ends the active lease of one message, which an operator
	// deleted or moved without a receipt (the admin API's message actions).
	KindRemove
	// KindRefused is a renewal the 12-hour ceiling refused: the lease may
	// not end later than MaxLeaseTime after its receive (Deadline is the
	// end asked for), so the message comes back by then whatever its
	// holder's heartbeat does.
	KindRefused
	// KindSeen is a request by Client on the queue that leased nothing (a
	// receive that found no message): its holder is alive. A receive whose
	// client had left before its answer is none (its end is no sign of
	// life). The ledger keeps one a second per client and queue
	// (Ledger.Record). One marked Unanswered is a delete or visibility
	// change by receipt that the store did not answer, kept always.
	KindSeen
)

// Event is one mutation of the ledger, self-contained so that it can
// be applied on any node: the node that handled the request fills in what
// the store told it, and the others apply it as it is. Queue ids are the
// store's and so the same on every node.
type Event struct {
	Kind      EventKind
	QueueID   uint64
	MessageID string
	Epoch     uint32
	At        time.Time
	// Deadline is the lease's end after a receive or change (at or before
	// at: a release).
	Deadline time.Time
	// LeasedAt is when the receipt's lease began (delete, change).
	LeasedAt     time.Time
	ReceiveCount int
	// N is, for a send, the messages stored; for a receive, how many
	// messages the receive handed out together (Batch).
	N int
	// Batch tells the receives of one request apart (receive): the
	// messages of one ReceiveMessage share it when it handed out more than
	// one, else it is zero.
	Batch uint64
	// SentAt is when the message was sent (receive), or the retention
	// cutoff: messages sent before it were deleted (retention).
	SentAt time.Time
	// Result is what the store found for a delete or change by receipt.
	Result baton.LeaseResult
	// StoreEpoch is the message's current lease epoch in the store (0 if
	// the message was gone).
	StoreEpoch uint32
	// duplicate: a late completion on a message meanwhile leased to
	// another receiver; the handling node decides, from the store's epoch
	// and its ledger.
	duplicate bool
	// Removed: a delete removed the message, ending whatever lease holds it.
	Removed bool
	// FIFO: a delete on a FIFO queue, which refuses the receipt of a lease
	// no longer live (MessageDeleteParams.RequireLive): such a delete
	// deletes nothing, so one that deleted its message came in time
	// (lostDelete).
	FIFO bool
	// Shortened: a change the store found current that moved its lease's
	// end earlier than it was (Shortens; the handling node knows the end
	// from the store). It is a release with a delay, not a renewal
	// (changed).
	Shortened bool
	// Progress: a renewal its holder made because the handler reported
	// progress (Baton's consumer says so with RenewalHeader), not a
	// heartbeat that renews whatever the handler does.
	Progress bool
	// Replay: a visibility change that a FIFO receive retried with its
	// ReceiveRequestAttemptId made, handing out the same lease again reset
	// to a new end (Deadline): the receive again, no renewal by its holder.
	Replay bool
	// QueueTimeout: a receive whose request gave no VisibilityTimeout, so
	// its lease is the queue's VisibilityTimeout at the time; else the
	// request asked for its lease's length, as a change always does.
	QueueTimeout bool
	// ClientLeft: a receive whose answer reached no client, which had left
	// before it came (an HTTP client whose read timeout is shorter than
	// the long poll's WaitTimeSeconds): its lease is held by no one, and
	// its message comes back when the lease lapses (clientleft.go). On a
	// Replay, the same of the retried receive's answer: one that reached
	// its client makes the lease that client's again. An answer lost
	// after its receive was recorded (its client gone as it was written)
	// is told by the same event again, with ClientLeft (answer.go).
	ClientLeft bool
	// Unanswered: a delete (Deadline zero) or visibility change (to
	// Deadline) by the receipt of lease Epoch of MessageID, made at At,
	// that the store failed (503: not made, or its outcome unknown), so
	// that the SDK retries it. It is sent as KindSeen, which a node of an
	// earlier build reads as its client seen, as it was. A retry that
	// finds its lease ended is read against this attempt's time
	// (unanswered.go).
	Unanswered bool
	// Answering: a receive, or a Replay, whose answer is still to be
	// written. Its client is seen only once the answer went out
	// (Ledger.AnswerWent tells so, as KindSeen), not by the event: a
	// request whose answer is lost (its host gone, the connection cut) is
	// no sign that the client is there. A node of an earlier build reads
	// it as its client seen.
	Answering bool
	Client    Client
}

// Shortens says whether a visibility change to end, of a lease that ends
// at leaseEnd, is a release with a delay (Event.Shortened): it brings the
// end forward. A change to the very end the lease has moves nothing, and
// is a renewal: a store's rerun of a renewal whose answer was lost finds
// the end the first run set.
func Shortens(end, leaseEnd time.Time) bool { return end.Before(leaseEnd) }

// Lease event kinds, as the history reports them.
const (
	EventReceive    = "receive"
	EventRenew      = "renew"
	EventRelease    = "release"
	EventExpire     = "expire"
	EventDelete     = "delete"
	EventLateDelete = "late-delete"
	EventLateChange = "late-change"
	EventDeadLetter = "dead-letter"
	// EventRemoved ends a lease whose message another receiver's late
	// delete removed from under it.
	EventRemoved = "removed"
	// EventRefused is a renewal the 12-hour ceiling refused.
	EventRefused = "refused"
)

// LeaseEvent is one entry of a message's lease history.
type LeaseEvent struct {
	At           time.Time
	Kind         string
	Epoch        uint32
	ReceiveCount int
	// Deadline is the lease's end after a receive or renewal; on a late
	// change that went through to the message's current lease (a standard
	// queue's older receipt handle), the new end of that lease.
	Deadline time.Time
	// Late is how long after its lease's deadline a late completion came.
	Late time.Duration
	// Duplicate marks a late completion on a message that had meanwhile
	// been leased to another receiver.
	Duplicate bool
	// Refused and AlreadyDeleted mark a delete (late or in time) that
	// deleted nothing (deleteMarks).
	Refused, AlreadyDeleted bool
	// StoreFailedAt, on a delete after its lease's lapse, is when its
	// first attempt came, in time, which the store failed without making
	// it (failedInTime): the lapse was the store's, not its holder's.
	StoreFailedAt time.Time
	Client        Client
}

// applyLocal applies an event this node made, deciding the facts that
// depend on what it knows (a late completion's duplicate), and returns the
// event as the other nodes should apply it; ok is false when it told
// nothing new (a client seen again within seenEvery), and was dropped.
func (l *Ledger) applyLocal(ev Event) (_ Event, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ev.Kind == KindSeen && !ev.Unanswered {
		// Applied here always; told the other nodes once a seenEvery.
		ql := l.queue(ev.QueueID)
		ql.saw(ev.Client, ev.At)
		return ev, ql.publishSeen(ev.Client, ev.At)
	}
	if ev.Kind == KindDelete || ev.Kind == KindChange {
		if ev.Result != baton.LeaseCurrent {
			ev.duplicate = ev.StoreEpoch > ev.Epoch
			if ql, ok := l.queues[ev.QueueID]; ok {
				if tm, ok := ql.messages[ev.MessageID]; ok && tm.latest > ev.Epoch {
					ev.duplicate = true
				}
			}
		}
	}
	l.applyLocked(ev, true)
	return ev, true
}

// seesClient says whether ev is a request of its client on the queue that
// shows the client there: a receive, or the change a replayed one made
// (Replay), only once its answer went out (one whose client left, or
// whose answer is still to be written, does not).
func seesClient(ev Event) bool {
	if ev.Client == (Client{}) {
		return false
	}
	switch ev.Kind {
	case KindReceive:
		return !ev.ClientLeft && !ev.Answering
	case KindChange:
		return !ev.Replay || !ev.ClientLeft && !ev.Answering
	case KindDelete, KindSeen, KindRefused:
		return true
	}
	return false
}

// apply applies an event another node made.
func (l *Ledger) apply(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applyLocked(ev, false)
}

func (l *Ledger) applyLocked(ev Event, local bool) {
	if ev.Kind == KindForget {
		if ql, ok := l.queues[ev.QueueID]; ok {
			for _, tm := range ql.messages {
				l.lru.remove(tm)
				l.events -= len(tm.history)
			}
			delete(l.queues, ev.QueueID)
		}
		return
	}
	defer l.trim()
	ql := l.queue(ev.QueueID)
	ql.expire(ev.At)
	if seesClient(ev) {
		ql.saw(ev.Client, ev.At)
	}
	switch ev.Kind {
	case KindSent:
		ql.count(ev.At, local, func(c *counters) { c.sent += uint64(ev.N) })
	case KindReceive:
		ql.begin(ev, local)
	case KindChange:
		ql.changed(ev, local)
	case KindDelete:
		ql.completed(ev, local)
	case KindPurge:
		ql.purged(ev.At)
	case KindRetention:
		ql.retained(ev.At, ev.SentAt)
	case KindDeadLetter:
		ql.deadLettered(ev, local)
	case KindRemove:
		ql.removedOne(ev)
	case KindRefused:
		ql.refused(ev, local)
	case KindSeen:
		if ev.Unanswered {
			ql.unanswered(ev)
		}
	}
}
