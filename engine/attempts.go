package engine

import (
	"context"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
)

// attemptWindow is how long a FIFO ReceiveRequestAttemptId is honoured.
const attemptWindow = 5 * time.Minute

// attemptKey names a receive attempt: its queue and its
// ReceiveRequestAttemptId. On one server the engine keeps attempts in a
// baton.AttemptLog; on a shared store, the store keeps them for every node.
type attemptKey struct {
	queueID uint64
	id      string
}

// rememberAttempt records that the receive named k leased msgs. A failure
// is logged, not returned: the messages are leased and answered, and a
// retry then receives afresh.
func (e *Engine) rememberAttempt(ctx context.Context, k attemptKey, msgs []*baton.Message) {
	at := baton.Attempt{QueueID: k.queueID, ID: k.id, LeasedAt: msgs[0].LeasedAt, Forget: e.clock.Now().Add(-attemptWindow)}
	for _, m := range msgs {
		at.Leases = append(at.Leases, baton.LeaseRef{MessageID: m.ID, Epoch: m.Epoch})
		if m.LeasedAt.Before(at.LeasedAt) {
			at.LeasedAt = m.LeasedAt
		}
	}
	if err := e.attempts.AttemptPut(ctx, at); err != nil {
		e.log.Warn("a FIFO receive's ReceiveRequestAttemptId was not recorded: a retry will not get the same messages",
			"queue_id", k.queueID, "error", err)
	}
}

// replayAttempt returns the messages of an earlier receive with the same
// attempt id, with their leases reset to vis from now (but never past 12 h
// after that receive), if every one of them is still held under that
// receive's lease; otherwise ok is false, the leases it reset are put back
// as they were, and the caller receives afresh.
func (e *Engine) replayAttempt(ctx context.Context, k attemptKey, vis int) (_ []*baton.Message, ok bool, err error) {
	now := e.clock.Now()
	at, ok, err := e.attempts.AttemptGet(ctx, k.queueID, k.id, now.Add(-attemptWindow))
	if err != nil {
		return nil, false, storeErr(err, "read receive attempt")
	}
	if !ok {
		return nil, false, nil
	}
	var reset []baton.MessageChangeVisibilityParams // how to undo each reset
	var renewed []ledger.Event
	defer func() {
		if ok {
			return
		}
		for _, undo := range reset {
			// Best effort: an undo that fails leaves that lease as long as
			// the replay made it, still within the 12 h ceiling.
			e.store.MessageChangeVisibility(ctx, undo)
		}
	}()
	end := now.Add(time.Duration(vis) * time.Second)
	if ceiling := at.LeasedAt.Add(baton.MaxVisibilityTimeout * time.Second); end.After(ceiling) {
		end = ceiling
	}
	msgs := make([]*baton.Message, 0, len(at.Leases))
	for _, l := range at.Leases {
		out, err := e.store.MessageChangeVisibility(ctx, baton.MessageChangeVisibilityParams{
			QueueID: k.queueID, MessageID: l.MessageID, Epoch: l.Epoch, Now: now, VisibleAt: end,
		})
		if err != nil {
			return nil, false, storeErr(err, "reset lease")
		}
		if out.Result != baton.LeaseCurrent {
			return nil, false, nil
		}
		m := out.Message // as it was: leased by the first receive
		msgs = append(msgs, m)
		reset = append(reset, baton.MessageChangeVisibilityParams{
			QueueID: k.queueID, MessageID: m.ID, Epoch: m.Epoch, Now: now, VisibleAt: m.VisibleAt,
		})
		// The lease goes on to a new end: the ledger must not see it lapse
		// at the old one (told once every reset held), nor count its
		// holder's renewal (the receive again).
		renewed = append(renewed, ledger.Event{
			Kind: ledger.KindChange, QueueID: k.queueID, MessageID: m.ID, Epoch: m.Epoch, At: now, Deadline: end,
			LeasedAt: m.LeasedAt, Result: out.Result, StoreEpoch: epochOf(m), Replay: true, Client: ledger.ClientFrom(ctx),
		})
	}
	// The replay's leases are its client's, unless it too left before
	// the answer (ledger.Event.ClientLeft); its client is seen once its
	// answer went out, as a receive's (ledger.Event.Answering).
	left, answer := ctx.Err() != nil, ledger.AnswerOf(ctx)
	for _, ev := range renewed {
		ev.ClientLeft, ev.Answering = left, answer != nil && !left
		e.record(ev)
		answer.Hand(ev)
	}
	return msgs, true, nil
}
