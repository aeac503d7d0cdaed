package consumer

import (
	"errors"
	"fmt"
	"time"
)

// What a handler's return value asks the runtime to do with the message:
//
//	nil           delete it: the work is done
//	Retry(after)  release it to come back after the delay (spends an attempt)
//	NotReady(d)   snooze it without spending an attempt (standard queues:
//	              re-sent with DelaySeconds; FIFO: visibility change)
//	Permanent(e)  send it to the dead-letter queue now, then delete it
//	Drop(e)       delete it without doing the work
//	other error   retry after the RetryPolicy's delay
//
// Outcomes may be wrapped (fmt.Errorf("...: %w", consumer.Retry(d))).

type outcomeKind int

const (
	outcomeRetry outcomeKind = iota + 1
	outcomeNotReady
	outcomePermanent
	outcomeDrop
	// outcomeDuplicate: the idempotency middleware found the work done.
	outcomeDuplicate
	// outcomeHeld: the idempotency middleware found this very message (a
	// duplicate delivery) in the hands of another live attempt.
	outcomeHeld
)

// outcome is the error type behind Retry, NotReady, Permanent and Drop.
type outcome struct {
	kind  outcomeKind
	after time.Duration
	err   error
}

// Error describes the outcome.
func (o *outcome) Error() string {
	switch o.kind {
	case outcomeRetry:
		return fmt.Sprintf("consumer: retry after %v", o.after)
	case outcomeNotReady:
		return fmt.Sprintf("consumer: not ready, snooze %v", o.after)
	case outcomePermanent:
		return fmt.Sprintf("consumer: permanent failure: %v", o.err)
	case outcomeDuplicate:
		return "consumer: already done"
	case outcomeHeld:
		return "consumer: held by another attempt"
	case outcomeDrop:
		if o.err != nil {
			return fmt.Sprintf("consumer: drop: %v", o.err)
		}
		return "consumer: drop"
	}
	return "consumer: outcome"
}

// Unwrap returns the error a Permanent or Drop carries.
func (o *outcome) Unwrap() error { return o.err }

// Retry asks for the message to come back after the given delay; after <= 0
// means the RetryPolicy's delay. The next receive spends one of the
// message's attempts (see Delivery.AttemptsLeft).
func Retry(after time.Duration) error { return &outcome{kind: outcomeRetry, after: after} }

// NotReady snoozes the message for at least the given delay without
// spending an attempt: a message snoozed again and again backs off (see
// WithSnoozePolicy), so after <= 0 means the policy's delay alone, one
// second at first. On a standard queue the runtime re-sends the message with
// DelaySeconds and attempt and delivery counter attributes (AttrAttempts,
// AttrDeliveries), then deletes the original; delays past 15 minutes are
// carried in an attribute and re-snoozed without calling the handler. On a
// FIFO queue (re-sending would break the group's order), or when
// WithSnoozeByVisibility is set, or when the message carries too many
// attributes to add the runtime's (SQS allows ten), it changes the
// visibility instead, which does spend a receive; a snooze on the last
// receive the queue's RedrivePolicy allows is reported
// (EventLastReceiveSnooze, and logged), since SQS dead-letters the
// message at its next receive.
func NotReady(after time.Duration) error { return &outcome{kind: outcomeNotReady, after: after} }

// Permanent says the message can never succeed: the runtime sends it to the
// queue's dead-letter queue (from its RedrivePolicy, or WithDeadLetterQueue)
// and deletes it. Without a dead-letter queue it falls back to a retry, so
// nothing is lost silently; Doctor warns about that set-up.
func Permanent(err error) error { return &outcome{kind: outcomePermanent, err: err} }

// Drop deletes the message without doing the work; reason (may be nil) is
// reported to the Observer.
func Drop(reason error) error { return &outcome{kind: outcomeDrop, err: reason} }

// asOutcome finds an outcome in err's chain.
func asOutcome(err error) (*outcome, bool) {
	var o *outcome
	if errors.As(err, &o) {
		return o, true
	}
	return nil, false
}

// outcomeName labels a handler result for observers and metrics.
func outcomeName(err error) string {
	if err == nil {
		return "success"
	}
	if o, ok := asOutcome(err); ok {
		switch o.kind {
		case outcomeRetry:
			return "retry"
		case outcomeNotReady:
			return "not_ready"
		case outcomePermanent:
			return "permanent"
		case outcomeDrop:
			return "drop"
		case outcomeDuplicate, outcomeHeld:
			return "duplicate"
		}
	}
	return "error"
}
