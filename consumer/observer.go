package consumer

import "time"

// EventKind names what happened.
type EventKind int

// The events the runtime reports. Each documents the Event fields it sets
// beyond Kind, Time and Queue.
const (
	// EventReceived: a receive returned Count messages.
	EventReceived EventKind = iota + 1
	// EventHandled: a handler returned. MessageID, Attempt, Duration (how
	// long it ran), Visibility (the lease length it was given when
	// received: the effective visibility the duration is to be compared
	// with), Renewals, Outcome, Err.
	EventHandled
	// EventRenewed: a lease was extended. MessageID, Renewals, Delay (the
	// extension).
	EventRenewed
	// EventRenewFailed: an extension failed but the lease may survive. Err.
	EventRenewFailed
	// EventStalled: an attempt was cancelled with ErrStalled.
	EventStalled
	// EventAttemptTimeout: an attempt was cancelled with ErrAttemptTimeout.
	EventAttemptTimeout
	// EventLeaseLost: the runtime gave a lease up as lost. Err says why.
	EventLeaseLost
	// EventReleased: a lease was released early. Reason, Delay.
	EventReleased
	// EventDeleted: a message was deleted. Reason (ReasonDone, ReasonDrop,
	// ReasonSnoozed, ReasonDeadLettered, ReasonDuplicate).
	EventDeleted
	// EventLateDelete: a handler succeeded after its lease was lost, and the
	// runtime deleted the message with the stale receipt. Err is set if that
	// delete failed.
	EventLateDelete
	// EventDeleteFailed: a delete failed for good; the message will be
	// delivered again. Err.
	EventDeleteFailed
	// EventDeadLettered: a message was sent to the dead-letter queue. Err is
	// the handler's reason.
	EventDeadLettered
	// EventSnoozed: NotReady re-sent the message. Delay.
	EventSnoozed
	// EventDuplicate: the idempotency middleware found the work already
	// done and skipped the handler.
	EventDuplicate
	// EventSlotStuck: a cancelled handler did not return within the grace
	// period; its slot stays busy until it does.
	EventSlotStuck
	// EventError: an SQS call or a store call failed. Op, Err.
	EventError
	// EventLastReceiveSnooze: NotReady snoozed a message by a visibility
	// change on the last receive its queue's RedrivePolicy allows
	// (ApproximateReceiveCount = maxReceiveCount): SQS moves it to the
	// dead-letter queue at its next receive. MessageID, Attempt, Delay.
	EventLastReceiveSnooze
	// EventLeaseOutgrown: the handlers' observed p99 duration (Duration)
	// first exceeded the lease given at receive (Visibility): messages
	// depend on renewals. Reported once per consumer.
	EventLeaseOutgrown
	// EventNoProgress: a handler has run ten times the handlers' p99 (P99)
	// without calling Progress, its leases renewed by the auto-renew
	// budget alone, which ends in Delay (then it is stalled): a hung
	// handler keeps its message hidden until then. MessageID, Attempt,
	// Duration (how long it has run), Renewals. Reported once per attempt.
	EventNoProgress
	// EventReceivesFailing: a receive failed after one that succeeded (or
	// as the first): the receives start failing. Err. Each failed receive
	// is also an EventError.
	EventReceivesFailing
	// EventReceivesRecovered: a receive succeeded after failed ones. Count
	// (how many failed in a row), Duration (from the first of them until
	// this receive was sent).
	EventReceivesRecovered
	// EventStartupFinding: at start, Doctor found a set-up that works but
	// invites trouble (a warning). Finding. Findings of SeverityError stop
	// the start (Run's *DoctorError) and are not events.
	EventStartupFinding
)

var eventNames = map[EventKind]string{
	EventReceived: "received", EventHandled: "handled", EventRenewed: "renewed",
	EventRenewFailed: "renew_failed", EventStalled: "stalled", EventAttemptTimeout: "attempt_timeout",
	EventLeaseLost: "lease_lost", EventReleased: "released", EventDeleted: "deleted",
	EventLateDelete: "late_delete", EventDeleteFailed: "delete_failed", EventDeadLettered: "dead_lettered",
	EventSnoozed: "snoozed", EventDuplicate: "duplicate", EventSlotStuck: "slot_stuck", EventError: "error",
	EventLastReceiveSnooze: "last_receive_snooze", EventLeaseOutgrown: "lease_outgrown",
	EventNoProgress: "no_progress", EventReceivesFailing: "receives_failing", EventReceivesRecovered: "receives_recovered",
	EventStartupFinding: "startup_finding",
}

// String names the kind in snake case.
func (k EventKind) String() string {
	if s, ok := eventNames[k]; ok {
		return s
	}
	return "unknown"
}

// Reason says why a lease was released or a message deleted.
type Reason string

// Release and delete reasons.
const (
	ReasonDone         Reason = "done"          // handler succeeded
	ReasonError        Reason = "error"         // handler failed: RetryPolicy delay
	ReasonRetry        Reason = "retry"         // handler returned Retry
	ReasonNotReady     Reason = "not_ready"     // NotReady by visibility change
	ReasonSnoozed      Reason = "snoozed"       // NotReady by re-send: original deleted
	ReasonDeadLettered Reason = "dead_lettered" // Permanent: original deleted
	ReasonDrop         Reason = "drop"          // handler returned Drop
	ReasonDuplicate    Reason = "duplicate"     // idempotency: work already done
	ReasonStalled      Reason = "stalled"       // attempt stalled
	ReasonTimeout      Reason = "timeout"       // attempt overran
	ReasonShutdown     Reason = "shutdown"      // consumer shutting down: not a failure
	ReasonGroupSkipped Reason = "group_skipped" // FIFO: an earlier message of the group failed
	ReasonHandler      Reason = "handler"       // the handler called Lease.Release
)

// Event is one thing that happened in the runtime.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Time is when it happened, on the runtime's clock.
	Time time.Time
	// Queue is the queue's name.
	Queue string
	// MessageID identifies the message (Delivery.ID, or the copy's
	// MessageId for lease events).
	MessageID string
	// Attempt is the delivery's attempt number.
	Attempt int
	// Duration is how long a handler ran (EventHandled), or how long the
	// attempt had run when it was cancelled.
	Duration time.Duration
	// Visibility is the lease length the delivery was given at receive.
	Visibility time.Duration
	// Delay is a release's delay, a renewal's extension or a snooze.
	Delay time.Duration
	// Renewals counts the renewals of the message's lease so far.
	Renewals int
	// P99 is the handlers' p99 duration an EventNoProgress compares with.
	P99 time.Duration
	// Count is the number of messages a receive returned, or the failed
	// receives an EventReceivesRecovered ends.
	Count int
	// Reason says why a lease was released or a message deleted.
	Reason Reason
	// Outcome labels a handler's result: success, error, retry,
	// not_ready, permanent, drop or duplicate.
	Outcome string
	// Op names the failed call for EventError.
	Op string
	// Err is the error involved, if any.
	Err error
	// Finding is what Doctor found, for EventStartupFinding.
	Finding Finding
}

// Observer receives the runtime's events, synchronously from its goroutines:
// it must be quick and must not block. Metrics is an Observer.
type Observer interface {
	// Observe is told one event.
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

// Observers fans events out to several observers, in order.
func Observers(obs ...Observer) Observer {
	return ObserverFunc(func(e Event) {
		for _, o := range obs {
			if o != nil {
				o.Observe(e)
			}
		}
	})
}
