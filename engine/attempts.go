package engine

import (
	"context"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
)

// attemptWindow is how long a FIFO ReceiveRequestAttemptId is honoured.
const attemptWindow = 5 * time.Minute

// attempts remembers what FIFO receives with a ReceiveRequestAttemptId
// returned, so that a retried receive gets the same messages and receipt
// handles instead of leaving them locked in flight.
type attempts struct {
	mu   sync.Mutex
	byID map[attemptKey]attempt
}

type attemptKey struct {
	queueID uint64
	id      string
}

type attempt struct {
	msgs []*baton.Message
	at   time.Time
}

func (a *attempts) get(k attemptKey, now time.Time) ([]*baton.Message, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.byID[k]
	if !ok || now.Sub(at.at) > attemptWindow {
		return nil, false
	}
	return at.msgs, true
}

func (a *attempts) put(k attemptKey, msgs []*baton.Message, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID == nil {
		a.byID = make(map[attemptKey]attempt)
	}
	for old, at := range a.byID { // forget expired attempts as we go
		if now.Sub(at.at) > attemptWindow {
			delete(a.byID, old)
		}
	}
	a.byID[k] = attempt{msgs: msgs, at: now}
}

// replayAttempt returns the messages of an earlier receive with the same
// attempt id, with their leases reset to vis from now (but never past 12 h
// after that receive), if every one of them is still held under that
// receive's lease; otherwise ok is false, the leases it reset are put back
// as they were, and the caller receives afresh.
func (e *Engine) replayAttempt(ctx context.Context, k attemptKey, vis int) (_ []*baton.Message, ok bool, err error) {
	now := e.clock.Now()
	msgs, ok := e.attempts.get(k, now)
	if !ok {
		return nil, false, nil
	}
	var reset []baton.MessageChangeVisibilityParams // how to undo each reset
	var renewed []ledgerEvent
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
	for _, m := range msgs {
		end := now.Add(time.Duration(vis) * time.Second)
		if ceiling := m.LeasedAt.Add(baton.MaxVisibilityTimeout * time.Second); end.After(ceiling) {
			end = ceiling
		}
		out, err := e.store.MessageChangeVisibility(ctx, baton.MessageChangeVisibilityParams{
			QueueID: k.queueID, MessageID: m.ID, Epoch: m.Epoch, Now: now, VisibleAt: end,
		})
		if err != nil {
			return nil, false, storeErr(err, "reset lease")
		}
		if out.Result != baton.LeaseCurrent {
			return nil, false, nil
		}
		reset = append(reset, baton.MessageChangeVisibilityParams{
			QueueID: k.queueID, MessageID: m.ID, Epoch: m.Epoch, Now: now, VisibleAt: out.Message.VisibleAt,
		})
		// The lease goes on to a new end, as after a renewal: the ledger
		// must not see it lapse at the old one (told once every reset held).
		renewed = append(renewed, ledgerEvent{
			kind: kindChange, queueID: k.queueID, messageID: m.ID, epoch: m.Epoch, at: now, deadline: end,
			leasedAt: m.LeasedAt, result: out.Result, storeEpoch: epochOf(out.Message), client: clientFrom(ctx),
		})
	}
	for _, ev := range renewed {
		e.record(ev)
	}
	return msgs, true, nil
}
