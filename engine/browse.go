package engine

import (
	"context"
	"errors"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
)

// MaxBrowseLimit bounds one page of BrowseMessages.
const MaxBrowseLimit = 1000

// maxBrowseContains bounds a browse's body substring: it can match no more
// than a whole body.
const maxBrowseContains = baton.MaxMessageSize

// BrowseParams select a page of BrowseMessages; see
// baton.MessageBrowseParams.
type BrowseParams struct {
	Newest       bool
	States       baton.MessageState
	BodyContains string
	Cursor       string
	Limit        int
}

// BrowsePage is a page of a queue's messages as they were at Now.
type BrowsePage struct {
	Now      time.Time
	Messages []*baton.Message
	// Next continues the listing; empty at its end.
	Next string
}

// BrowseMessages lists a page of the queue's messages without receiving
// them: no lease starts, no receive count grows, and the lease ledger
// records nothing, so that looking at a queue does not change it.
func (e *Engine) BrowseMessages(ctx context.Context, ref QueueRef, p BrowseParams) (BrowsePage, error) {
	if p.Limit < 1 || p.Limit > MaxBrowseLimit {
		return BrowsePage{}, baton.Errorf(baton.ErrInvalidParameterValue, "The limit must be between 1 and %d.", MaxBrowseLimit)
	}
	if p.States&^baton.AllStates != 0 {
		return BrowsePage{}, baton.Errorf(baton.ErrInvalidParameterValue, "Unknown message state.")
	}
	if len(p.BodyContains) > maxBrowseContains {
		return BrowsePage{}, baton.Errorf(baton.ErrInvalidParameterValue,
			"The body substring must be at most %d bytes long.", maxBrowseContains)
	}
	q, err := e.queue(ctx, ref)
	if err != nil {
		return BrowsePage{}, err
	}
	now := e.clock.Now()
	page, err := e.store.MessageBrowse(ctx, baton.MessageBrowseParams{
		QueueID: q.ID, Now: now, Newest: p.Newest, States: p.States, BodyContains: p.BodyContains,
		Cursor: p.Cursor, Limit: p.Limit,
	})
	if errors.Is(err, baton.ErrInvalidCursor) {
		return BrowsePage{}, baton.Errorf(baton.ErrInvalidParameterValue, "The cursor is not one this listing gave.")
	}
	if err != nil {
		return BrowsePage{}, storeErr(err, "browse messages")
	}
	return BrowsePage{Now: now, Messages: page.Messages, Next: page.Next}, nil
}

// An operator acts on a message found by browsing, by its id rather than a
// receipt: delete it, release it, or move it to another queue. The lease
// ledger sees a release as any release, and a delete or move of a message
// in flight as the removal of its lease (EventRemoved), neither completed
// nor lapsed.

// errNoSuchMessage is the answer for a message that is not in the queue.
func errNoSuchMessage(id string) *baton.Error {
	return baton.Errorf(baton.ErrResourceNotFound, "The queue holds no message %s.", id)
}

// removedByOperator follows an operator's delete or move of message id,
// whose state before it the store returned as m: a lease it was in flight
// under ends (neither completed nor lapsed), and what waited on it goes
// on: the rest of its FIFO group, or a receive held back by the in-flight
// limit.
func (e *Engine) removedByOperator(q *baton.Queue, id string, m *baton.Message, now time.Time) {
	if !inFlight(m, now) {
		return
	}
	e.record(ledger.Event{Kind: ledger.KindRemove, QueueID: q.ID, MessageID: id, Epoch: m.Epoch, At: now})
	if q.IsFIFO() {
		e.notify(q.ID)
	} else {
		e.madeRoom(q.ID)
	}
}

// inFlight reports whether m, as a store returned it, was in flight at now.
func inFlight(m *baton.Message, now time.Time) bool {
	return m != nil && m.StateAt(now) == baton.StateInFlight
}

// DeleteMessageByID deletes a message of the queue whatever its lease.
func (e *Engine) DeleteMessageByID(ctx context.Context, ref QueueRef, id string) error {
	if id == "" {
		return baton.MissingParameter("message_id")
	}
	q, err := e.queue(ctx, ref)
	if err != nil {
		return err
	}
	now := e.clock.Now()
	// No receipt's epoch is 0: whatever lease the message has, the
	// delete finds it lapsed and, not requiring it live, deletes.
	out, err := e.store.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: q.ID, MessageID: id, Now: now})
	if err != nil {
		return storeErr(err, "delete message")
	}
	if out.Result == baton.LeaseGone {
		return errNoSuchMessage(id)
	}
	e.removedByOperator(q, id, out.Message, now)
	return nil
}

// ReleaseMessageByID ends the lease epoch of an in-flight message of the
// queue now (visibility timeout 0), as its holder's release would. The
// epoch, which the browse lists, keeps a stale page from releasing a lease
// begun since.
func (e *Engine) ReleaseMessageByID(ctx context.Context, ref QueueRef, id string, epoch uint32) error {
	if id == "" {
		return baton.MissingParameter("message_id")
	}
	q, err := e.queue(ctx, ref)
	if err != nil {
		return err
	}
	now := e.clock.Now()
	out, err := e.store.MessageChangeVisibility(ctx, baton.MessageChangeVisibilityParams{
		QueueID: q.ID, MessageID: id, Epoch: epoch, Now: now, VisibleAt: now,
	})
	if err != nil {
		return storeErr(err, "release message")
	}
	switch out.Result {
	case baton.LeaseGone:
		return errNoSuchMessage(id)
	case baton.LeaseCurrent:
	default:
		return baton.Errorf(baton.ErrInvalidParameterValue, "Message %s is not in flight under lease %d any more.", id, epoch)
	}
	e.record(ledger.Event{
		Kind: ledger.KindChange, QueueID: q.ID, MessageID: id, Epoch: epoch, At: now, Deadline: now,
		LeasedAt: out.Message.LeasedAt, Result: baton.LeaseCurrent, StoreEpoch: out.Message.Epoch, Client: ledger.ClientFrom(ctx),
	})
	e.notify(q.ID)
	return nil
}

// MoveMessageByID moves a message of the queue, whatever its lease, to
// another queue of the account of the same type, as a message move task
// does: a new message there, visible at once, received never, its retention
// period started again.
func (e *Engine) MoveMessageByID(ctx context.Context, ref QueueRef, id string, to QueueRef) error {
	if id == "" {
		return baton.MissingParameter("message_id")
	}
	if to.Name == "" {
		return baton.MissingParameter("destination_queue")
	}
	q, err := e.queue(ctx, ref)
	if err != nil {
		return err
	}
	dst, err := e.queue(ctx, to)
	if baton.IsCode(err, baton.ErrQueueDoesNotExist) {
		return baton.Errorf(baton.ErrResourceNotFound, "The destination queue %s does not exist.", to.Name)
	}
	if err != nil {
		return err
	}
	if dst.ID == q.ID {
		return baton.Errorf(baton.ErrInvalidParameterValue, "The destination queue is the message's own queue.")
	}
	if dst.IsFIFO() != q.IsFIFO() {
		return baton.Errorf(baton.ErrInvalidParameterValue, "A message moves only between queues of one type: both FIFO or both standard.")
	}
	now := e.clock.Now()
	out, err := e.store.MessageMove(ctx, baton.MessageMoveParams{
		QueueID: q.ID, MessageID: id, ToQueueID: dst.ID, Now: now, ResetSentAt: true,
	})
	if err != nil {
		return storeErr(err, "move message")
	}
	if out.Result == baton.LeaseGone {
		return errNoSuchMessage(id)
	}
	e.removedByOperator(q, id, out.Message, now)
	e.notify(dst.ID)
	return nil
}
