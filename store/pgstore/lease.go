package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

// Deletes and visibility changes lock the message's row, judge the
// receipt's lease on the row as it is once locked, and act, all in one
// statement: two holders of one receipt cannot both find the lease live.

// currentCTE locks message $2 of queue $1 and says whether lease epoch $3 is
// its live lease at $4.
const currentCTE = `
	cur AS (
		SELECT ` + messageColumns + `, (m.epoch = $3 AND m.leased AND m.visible_at > $4) AS live
		FROM baton_messages m WHERE m.queue_id = $1 AND m.id = $2
		FOR UPDATE)`

// MessageDelete deletes the message if the receipt's lease is live, or in
// any case unless p.RequireLive, in a round with others (group.go).
// Deleting a live lease of a FIFO queue (p.RequireLive) unblocks its group:
// it notifies the other servers.
func (s *Store) MessageDelete(ctx context.Context, p baton.MessageDeleteParams) (baton.LeaseOutcome, error) {
	outs, err := s.lease(ctx, &op{kind: opDelete, queueID: p.QueueID, now: p.Now, requireLive: p.RequireLive, payload: true,
		entries: []leaseEntry{{MessageID: p.MessageID, Epoch: p.Epoch}}})
	if err != nil {
		return baton.LeaseOutcome{}, err
	}
	if p.RequireLive && outs[0].Result == baton.LeaseCurrent {
		s.wake.add(p.QueueID)
	}
	return outs[0], nil
}

// MessageChangeVisibility moves the live lease's end (with p.AnyLease, a
// later live lease's too), in a round with others; a release (VisibleAt
// not after Now) notifies the other servers, whose long polls may want the
// message.
func (s *Store) MessageChangeVisibility(ctx context.Context, p baton.MessageChangeVisibilityParams) (baton.LeaseOutcome, error) {
	o := &op{kind: opChange, queueID: p.QueueID, now: p.Now, anyLease: p.AnyLease, payload: true,
		entries: []leaseEntry{{MessageID: p.MessageID, Epoch: p.Epoch, VisibleAt: p.VisibleAt}}}
	outs, err := s.lease(ctx, o)
	if err != nil {
		return baton.LeaseOutcome{}, err
	}
	s.wakeReleased(o)
	return outs[0], nil
}

// opNames name the ops in errors and for the fault hook.
var opNames = map[opKind]string{opSend: "send", opDelete: "delete", opChange: "change visibility"}

// lease runs a delete or visibility change op in a round, retried as retry
// does, and returns its outcomes, one per entry; ErrNotFound if the queue
// does not exist. A rerun after an unknown outcome finds the messages it
// deleted gone (LeaseGone, which the engine answers as success) and sets
// the lease ends it set again.
func (s *Store) lease(ctx context.Context, o *op) ([]baton.LeaseOutcome, error) {
	what := opNames[o.kind]
	err := s.retryWrite(ctx, func(ctx context.Context) error {
		err := s.group.commit(ctx, o)
		if err == nil {
			err = s.fault(what)
		}
		return err
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %s: %w", what, err)
	}
	if !foundAny(o.rows) {
		// A message found proves its queue existed (deleting a queue
		// deletes its messages in the same transaction, QueueDelete):
		// only a round that found none asks. A queue deleted since
		// the round is gone for a request the round did nothing for.
		if err := s.queueExists(ctx, o.queueID); err != nil {
			return nil, storeErr(err, what)
		}
	}
	outs := make([]baton.LeaseOutcome, len(o.rows))
	for i, r := range o.rows {
		outs[i] = outcome(r.msg, r.live)
		if o.kind == opChange && outs[i].Result == baton.LeaseLapsed && r.changed {
			// It took effect through a lease not the receipt's: a later one.
			outs[i].Result = baton.LeaseSuperseded
		}
	}
	return outs, nil
}

// foundAny reports whether a row of rows found its message.
func foundAny(rows []leaseRow) bool {
	for _, r := range rows {
		if r.msg != nil {
			return true
		}
	}
	return false
}

// queueExists returns nil if the queue exists, baton.ErrNotFound if not,
// and then drops the row kept of it (queueGone).
func (s *Store) queueExists(ctx context.Context, queueID uint64) error {
	var exists bool
	err := s.retry(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM baton_queues WHERE id = $1)`, int64(queueID)).Scan(&exists)
	})
	if err == nil && !exists {
		err = s.queueGone(queueID, baton.ErrNotFound)
	}
	return err
}

// wakeReleased notifies the other servers if a visibility change op made
// a message visible at once.
func (s *Store) wakeReleased(o *op) {
	for _, r := range o.rows {
		if r.released {
			s.wake.add(o.queueID)
			return
		}
	}
}

// outcome is the result of finding m (nil if gone) with its lease live or
// not.
func outcome(m *baton.Message, live bool) baton.LeaseOutcome {
	switch {
	case m == nil:
		return baton.LeaseOutcome{Result: baton.LeaseGone}
	case live:
		return baton.LeaseOutcome{Result: baton.LeaseCurrent, Message: m}
	default:
		return baton.LeaseOutcome{Result: baton.LeaseLapsed, Message: m}
	}
}

// MessageMove moves the message to another queue in one transaction that
// locks the target queue's row first (so that a move into a FIFO queue is
// numbered in commit order, like a send), then the message's row.
func (s *Store) MessageMove(ctx context.Context, p baton.MessageMoveParams) (baton.LeaseOutcome, error) {
	if p.QueueID == p.ToQueueID {
		return baton.LeaseOutcome{}, errors.New("pgstore: move within one queue")
	}
	var out baton.LeaseOutcome
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var targets, sources int
		err := tx.QueryRow(ctx, `
			WITH target AS (SELECT id FROM baton_queues WHERE id = $2 FOR NO KEY UPDATE)
			SELECT (SELECT count(*) FROM target), (SELECT count(*) FROM baton_queues WHERE id = $1)`,
			int64(p.QueueID), int64(p.ToQueueID)).Scan(&targets, &sources)
		if err != nil {
			return err
		}
		if targets == 0 || sources == 0 {
			return baton.ErrNotFound
		}
		var live bool
		m, err := scanMessage(tx.QueryRow(ctx, `WITH `+currentCTE+` SELECT `+leasedColumns+`, live FROM cur`,
			int64(p.QueueID), p.MessageID, int64(p.Epoch), p.Now), &live)
		if errors.Is(err, pgx.ErrNoRows) {
			out = baton.LeaseOutcome{Result: baton.LeaseGone}
			return nil
		}
		if err != nil {
			return err
		}
		if p.Epoch != 0 && !live {
			out = baton.LeaseOutcome{Result: baton.LeaseLapsed, Message: m}
			return nil
		}
		out = baton.LeaseOutcome{Result: baton.LeaseCurrent, Message: m}
		moved := p.Moved(*m)
		b := &pgx.Batch{}
		b.Queue(`
			UPDATE baton_messages SET queue_id = $3, pos = DEFAULT, visible_at = $4, leased = false,
				receive_count = $5, dead_letter_source_arn = $6, sent_at = $7, dedup_id = $8
			WHERE queue_id = $1 AND id = $2`,
			int64(p.QueueID), p.MessageID, int64(p.ToQueueID), moved.VisibleAt, moved.ReceiveCount,
			moved.DeadLetterSourceARN, moved.SentAt, moved.DedupID)
		if p.MoveTask != "" {
			b.Queue(`UPDATE baton_move_tasks SET moved = moved + 1 WHERE handle = $1`, p.MoveTask)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if errors.Is(err, baton.ErrNotFound) {
		s.queueGone(p.ToQueueID, err)
		return baton.LeaseOutcome{}, s.queueGone(p.QueueID, err)
	}
	if err != nil {
		return baton.LeaseOutcome{}, fmt.Errorf("pgstore: move: %w", err)
	}
	if out.Result == baton.LeaseCurrent {
		s.wake.add(p.ToQueueID)
	}
	return out, nil
}

// MessageStats counts the queue's messages at p.Now. Each figure is its own
// scan of one or two ranges of each index of states (byStates), so the
// cost is the counted messages' index entries (an index-only scan once
// vacuumed) and no other's.
func (s *Store) MessageStats(ctx context.Context, p baton.MessageStatsParams) (baton.MessageStats, error) {
	var (
		st             baton.MessageStats
		exists         *bool
		next, oldest   *time.Time
		vis, fly, wait int64
	)
	// Counting rows costs as many as there are: with p.Bound the visible
	// and delayed counts stop there (LIMIT NULL is no limit; least ignores
	// a NULL). The in-flight count reads the leased rows not yet visible
	// alone, which the in-flight limit bounds, and the minima take an index
	// entry or two each.
	var bound *int64
	if p.Bound > 0 {
		b := int64(p.Bound)
		bound = &b
	}
	err := s.retry(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `
		SELECT (SELECT true FROM baton_queues WHERE id = $1),
			least(`+byStates(`(SELECT count(*) FROM (SELECT FROM baton_messages
				WHERE queue_id = $1 AND %s AND leased IN (false, true) AND visible_at <= $2 LIMIT $3) v)`, " + ")+`, $3),
			`+byStates(`(SELECT count(*) FROM baton_messages WHERE queue_id = $1 AND %s AND leased AND visible_at > $2)`, " + ")+`,
			least(`+byStates(`(SELECT count(*) FROM (SELECT FROM baton_messages
				WHERE queue_id = $1 AND %s AND NOT leased AND visible_at > $2 LIMIT $3) d)`, " + ")+`, $3),
			least(`+byStates(`(SELECT min(visible_at) FROM baton_messages WHERE queue_id = $1 AND %s AND NOT leased AND visible_at > $2),
				(SELECT min(visible_at) FROM baton_messages WHERE queue_id = $1 AND %[1]s AND leased AND visible_at > $2)`, ", ")+`),
			(SELECT min(sent_at) FROM baton_messages WHERE queue_id = $1)`,
			int64(p.QueueID), p.Now, bound).Scan(&exists, &vis, &fly, &wait, &next, &oldest)
	})
	if err != nil {
		return st, fmt.Errorf("pgstore: stats: %w", err)
	}
	if exists == nil {
		return st, s.queueGone(p.QueueID, baton.ErrNotFound)
	}
	st.Visible, st.InFlight, st.Delayed = int(vis), int(fly), int(wait)
	st.NextVisibleAt, st.OldestSentAt = timeOf(next), timeOf(oldest)
	return st, nil
}

// byStates is the SQL expression term (its %s a condition on group_id)
// once for each index of states, joined by sep: for the messages without a
// group id, baton_messages_by_state, and for those with one,
// baton_messages_by_group_state. A statement uses a partial index only
// where its conditions imply the index's.
func byStates(term, sep string) string {
	return fmt.Sprintf(term, `group_id = ''`) + sep + fmt.Sprintf(term, `group_id > ''`)
}

// MessageExpire deletes the queue's messages sent before cutoff.
func (s *Store) MessageExpire(ctx context.Context, queueID uint64, cutoff time.Time) (int, error) {
	var exists bool
	var n int64
	err := s.retry(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `
		WITH d AS (DELETE FROM baton_messages WHERE queue_id = $1 AND sent_at < $2 RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM baton_queues WHERE id = $1), (SELECT count(*) FROM d)`,
			int64(queueID), cutoff).Scan(&exists, &n)
	})
	if err != nil {
		return 0, fmt.Errorf("pgstore: expire: %w", err)
	}
	if !exists {
		return 0, s.queueGone(queueID, baton.ErrNotFound)
	}
	return int(n), nil
}
