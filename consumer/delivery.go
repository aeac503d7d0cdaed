package consumer

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Message attributes the runtime adds when it re-sends a message (NotReady
// on a standard queue) and reads back on receive.
const (
	// AttrAttempts carries the attempts a message had spent before it was
	// re-sent, so a snooze does not reset or spend its attempt budget.
	AttrAttempts = "baton.attempts"
	// AttrMessageID carries the MessageId of the first copy, so the identity
	// (and idempotency keys) survive re-sends.
	AttrMessageID = "baton.message-id"
	// AttrDeliveries carries how many times the message had been delivered
	// before it was re-sent (snoozes included), so Lease.Epoch keeps growing
	// across re-sends.
	AttrDeliveries = "baton.deliveries"
	// AttrNotBefore (epoch milliseconds) carries the end of a snooze longer
	// than SQS's 15-minute maximum delay.
	AttrNotBefore = "baton.not-before"
	// AttrDeadLetterReason is added, when there is room, to a message the
	// runtime sends to a dead-letter queue.
	AttrDeadLetterReason = "baton.dead-letter-reason"
)

// Unlimited is what AttemptsLeft returns when the queue has no redrive
// policy.
const Unlimited = -1

// Delivery is one received message and its lease, handed to a handler.
type Delivery struct {
	// Message is the message as ReceiveMessage returned it, with all system
	// and message attributes.
	Message types.Message

	c            *Consumer
	lease        *Lease
	id           string
	group        string
	receiveCount int
	base         int
	delivered    int // deliveries of earlier copies (AttrDeliveries)
	notBefore    time.Time
}

func newDelivery(c *Consumer, m types.Message, sentAt time.Time) *Delivery {
	d := &Delivery{Message: m, c: c}
	d.receiveCount, _ = strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	if d.receiveCount < 1 {
		d.receiveCount = 1
	}
	d.group = m.Attributes["MessageGroupId"]
	if m.MessageId != nil {
		d.id = *m.MessageId
	}
	if v := stringAttr(m, AttrMessageID); v != "" {
		d.id = v
	}
	if v, err := strconv.Atoi(stringAttr(m, AttrAttempts)); err == nil && v > 0 {
		d.base = v
	}
	if v, err := strconv.Atoi(stringAttr(m, AttrDeliveries)); err == nil && v > 0 {
		d.delivered = v
	}
	// A copy re-sent without AttrDeliveries had at least its attempts.
	d.delivered = max(d.delivered, d.base)
	if v, err := strconv.ParseInt(stringAttr(m, AttrNotBefore), 10, 64); err == nil && v > 0 {
		d.notBefore = time.UnixMilli(v)
	}
	var own string
	if m.MessageId != nil {
		own = *m.MessageId
	}
	var handle string
	if m.ReceiptHandle != nil {
		handle = *m.ReceiptHandle
	}
	d.lease = newLease(c, own, handle, int64(d.delivered+d.receiveCount), d.Attempt(), sentAt, c.cfg.visibility)
	d.lease.group = d.group
	return d
}

func stringAttr(m types.Message, name string) string {
	if v, ok := m.MessageAttributes[name]; ok && v.StringValue != nil {
		return *v.StringValue
	}
	return ""
}

// ID is the message's identity: its MessageId, or the MessageId of the first
// copy if the runtime re-sent it.
func (d *Delivery) ID() string { return d.id }

// Body returns the message body.
func (d *Delivery) Body() string {
	if d.Message.Body == nil {
		return ""
	}
	return *d.Message.Body
}

// GroupID returns the MessageGroupId ("" if none).
func (d *Delivery) GroupID() string { return d.group }

// ReceiveCount is SQS's ApproximateReceiveCount for this copy of the message.
func (d *Delivery) ReceiveCount() int { return d.receiveCount }

// Attempt is the attempt number, 1 for the first: ApproximateReceiveCount
// plus the attempts carried across re-sends (snoozes do not count).
func (d *Delivery) Attempt() int { return d.base + d.receiveCount }

// AttemptsLeft is how many more deliveries the queue's RedrivePolicy
// (maxReceiveCount, read at start) allows after this one before the message
// goes to the dead-letter queue, or Unlimited without a redrive policy.
func (d *Delivery) AttemptsLeft() int {
	max := d.c.info.MaxReceiveCount
	if max == 0 {
		return Unlimited
	}
	if n := max - d.Attempt(); n > 0 {
		return n
	}
	return 0
}

// IsFinalAttempt reports whether a failure now sends the message to the
// dead-letter queue.
func (d *Delivery) IsFinalAttempt() bool { return d.AttemptsLeft() == 0 }

// Lease returns the delivery's lease.
func (d *Delivery) Lease() *Lease { return d.lease }

// Progress tells the runtime the handler is alive and moving, which keeps
// the lease renewed past the auto-renew budget. Call it whenever a unit of
// work completes. It returns the context's cancellation cause (ErrStalled,
// ErrLeaseLost, …) once the attempt has been cancelled, so a loop can stop.
func (d *Delivery) Progress(ctx context.Context) error { return d.alive(ctx, true) }

// KeepAlive keeps the lease renewed as Progress does, for a caller that
// cannot see the work move (a sidecar waiting on a target that says
// nothing until it answers): the renewals it causes do not tell Baton's
// lease doctor that the handler progressed, so a lease kept this way far
// beyond the queue's p99 is reported as possibly hung, not as a long job
// at work. Like Progress, it returns the context's cancellation cause once
// the attempt has been cancelled.
func (d *Delivery) KeepAlive(ctx context.Context) error { return d.alive(ctx, false) }

func (d *Delivery) alive(ctx context.Context, work bool) error {
	if a := d.lease.attempt(); a != nil {
		a.progress(d.c.clock.Now(), work)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}
