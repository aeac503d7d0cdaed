package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/ids"
)

// Test-state controls: a reset that deletes an account's queues at once,
// and the loading of messages exported with their state (the admin API's
// export and import build on these).

// resetMarks remembers, per account, when the account was last reset: a
// queue deleted by the reset (or before it) does not keep its name taken
// for the 60 seconds after a DeleteQueue, so a test suite can reset and at
// once create its queues again. The marks are the node's own: on several
// nodes sharing a store, another node still applies the 60 seconds.
type resetMarks struct {
	mu sync.Mutex
	at map[string]time.Time
}

// mark records a reset of account at t.
func (r *resetMarks) mark(account string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = make(map[string]time.Time)
	}
	r.at[account] = t
}

// cutoff is the DeletedCutoff of a CreateQueue in account: the later of
// cutoff and the account's last reset.
func (r *resetMarks) cutoff(account string, cutoff time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.at[account]; ok && t.After(cutoff) {
		return t
	}
	return cutoff
}

// AccountQueues returns the account's queues of region, or of every region
// when region is empty, in name order.
func (e *Engine) AccountQueues(ctx context.Context, account, region string) ([]*baton.Queue, error) {
	qs, err := e.store.QueueList(ctx, baton.QueueListParams{Region: region, Account: account})
	if err != nil {
		return nil, storeErr(err, "list queues")
	}
	return qs, nil
}

// Reset deletes every queue of the account in region (every region when
// region is empty), with their messages, after cancelling the move tasks
// running from them. It returns how many queues it deleted. Names it freed
// can be taken again at once, unlike after DeleteQueue (see resetMarks).
func (e *Engine) Reset(ctx context.Context, account, region string) (int, error) {
	qs, err := e.AccountQueues(ctx, account, region)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, q := range qs {
		if err := e.cancelMoveTasksFrom(ctx, q); err != nil {
			return deleted, err
		}
		err := e.store.QueueDelete(ctx, q.Region, q.Account, q.Name, e.clock.Now())
		if err != nil && !isNotFound(err) { // one deleted meanwhile is as good
			return deleted, storeErr(err, "delete queue")
		}
		e.record(ledger.Event{Kind: ledger.KindForget, QueueID: q.ID, At: e.clock.Now()})
		e.forgetQueue(q.ID)
		deleted++
	}
	e.resets.mark(account, e.clock.Now())
	return deleted, nil
}

func isNotFound(err error) bool { return errors.Is(err, baton.ErrNotFound) }

// cancelMoveTasksFrom cancels the running move tasks whose source is q.
func (e *Engine) cancelMoveTasksFrom(ctx context.Context, q *baton.Queue) error {
	all := baton.MaxMoveTasksKept
	tasks, err := e.ListMessageMoveTasks(ctx, q.Region, q.Account, e.QueueARN(q), &all)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.Status != TaskRunning {
			continue
		}
		if _, err := e.CancelMessageMoveTask(ctx, q.Region, q.Account, t.Handle); err != nil {
			return fmt.Errorf("cancel move task %s: %w", t.Handle, err)
		}
	}
	return nil
}

// ImportMessages stores messages as they were exported, into the queue of
// ref: each keeps its id (a new one if it has none), sent time, receive
// count, first receive, lease number, and its state: in flight (Leased,
// until VisibleAt), delayed or visible. A zero SentAt is now; a zero
// VisibleAt is the SentAt. On a FIFO queue each takes the queue's next
// sequence number, so messages should come in their send order, and a
// deduplication id is remembered for five minutes after the message's
// SentAt, as for a send then. Body and attributes are checked as a send
// checks them; nothing is stored if one is refused.
func (e *Engine) ImportMessages(ctx context.Context, ref QueueRef, msgs []*baton.Message) error {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return err
	}
	now := e.clock.Now()
	prep := make([]prepared, len(msgs))
	seen := make(map[string]bool, len(msgs))
	for i, m := range msgs {
		if prep[i], err = importable(q, m, now); err != nil {
			return fmt.Errorf("message %d: %w", i+1, err)
		}
		id := prep[i].msg.ID
		if seen[id] {
			return baton.Errorf(baton.ErrInvalidParameterValue, "message %d: id %s is given twice", i+1, id)
		}
		seen[id] = true
	}
	if len(prep) == 0 {
		return nil
	}
	_, err = e.storeMessages(ctx, q, prep, now)
	return err
}

// importable checks a message to import and fills in what it lacks.
func importable(q *baton.Queue, in *baton.Message, now time.Time) (prepared, error) {
	if in.Body == "" {
		return prepared{}, baton.MissingParameter("body")
	}
	if !validChars(in.Body) {
		return prepared{}, baton.Errorf(baton.ErrInvalidMessageContents, "The body holds characters SQS does not accept.")
	}
	if _, err := checkMessageAttributes(in.Attributes); err != nil {
		return prepared{}, err
	}
	m := *in
	m.BodyMD5 = MD5OfBody(m.Body)
	m.SequenceNumber = ""
	if m.ID == "" {
		m.ID = ids.NewUUID()
	}
	if m.SentAt.IsZero() {
		m.SentAt = now
	}
	if m.VisibleAt.IsZero() {
		m.VisibleAt = m.SentAt
	}
	if m.Leased && m.Epoch == 0 {
		m.Epoch = 1
	}
	if m.Leased && m.ReceiveCount == 0 {
		m.ReceiveCount = 1
	}
	key := ""
	if q.IsFIFO() {
		if m.GroupID == "" {
			return prepared{}, baton.MissingParameter("message_group_id")
		}
		if m.DedupID == "" {
			sum := sha256.Sum256([]byte(m.Body))
			m.DedupID = hex.EncodeToString(sum[:])
		}
		key = m.DedupID
		if q.DedupScope == "messageGroup" {
			key = m.GroupID + " " + m.DedupID
		}
	}
	return prepared{msg: &m, dedupKey: key}, nil
}
