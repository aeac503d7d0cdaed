package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

// MessageSend stores the messages in one transaction, then has the other
// servers notified. A standard queue's send joins a round with others
// (group.go). A FIFO send runs alone: it first locks its queue's row, so
// FIFO sends to one queue run one at a time across every server: each sees
// the keys the one before it accepted, and numbers its messages after the
// last one's.
func (s *Store) MessageSend(ctx context.Context, p baton.MessageSendParams) ([]baton.MessageSent, error) {
	var out []baton.MessageSent
	var stored int
	fifo, err := s.isFIFO(ctx, p.QueueID)
	switch {
	case err != nil:
	case !fifo:
		out = make([]baton.MessageSent, len(p.Messages))
		for i, m := range p.Messages {
			out[i] = baton.MessageSent{MessageID: m.ID, SequenceNumber: m.SequenceNumber}
		}
		// A rerun after a lost answer that meets the send's token (or
		// its messages' unique key) knows the run before committed: the
		// token and the messages are stored by one transaction. The token
		// outlives the messages, which a consumer may have received and
		// deleted before the rerun: the rerun must not store them again.
		o := &op{kind: opSend, queueID: p.QueueID, msgs: p.Messages}
		err = s.retryWrite(ctx, func(ctx context.Context) error {
			err := s.group.commit(ctx, o)
			if err == nil {
				err = s.fault("send")
			}
			return err
		}, isUniqueViolation)
		stored = len(p.Messages)
	default:
		// A rerun after a lost answer finds the deduplication keys the
		// run before recorded and answers with its ids.
		err = s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			out = make([]baton.MessageSent, len(p.Messages))
			store, err := s.numberFIFO(ctx, tx, p, out)
			stored = len(store)
			if err != nil || stored == 0 {
				return err
			}
			queues := make([]int64, stored)
			for i := range queues {
				queues[i] = int64(p.QueueID)
			}
			_, err = tx.Exec(ctx, insertMessagesSQL, messageArrays(queues, store)...)
			return err
		})
	}
	switch {
	case errors.Is(err, baton.ErrNotFound) || isForeignKeyViolation(err):
		return nil, s.queueGone(p.QueueID, baton.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("pgstore: send: %w", err)
	}
	if stored > 0 {
		s.wake.add(p.QueueID)
	}
	return out, nil
}

// numberFIFO locks the queue's row, deduplicates the messages against the
// keys accepted after p.DedupCutoff and against each other, numbers the rest
// and records their keys. It fills out and returns the messages to store,
// as copies carrying their sequence numbers.
func (s *Store) numberFIFO(ctx context.Context, tx pgx.Tx, p baton.MessageSendParams, out []baton.MessageSent) ([]*baton.Message, error) {
	if len(p.DedupKeys) != len(p.Messages) {
		return nil, fmt.Errorf("%d deduplication keys for %d messages", len(p.DedupKeys), len(p.Messages))
	}
	var seq int64
	err := tx.QueryRow(ctx, `SELECT last_seq FROM baton_queues WHERE id = $1 FOR NO KEY UPDATE`, int64(p.QueueID)).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, baton.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	// Forget the keys past the window, then look up the others.
	if _, err := tx.Exec(ctx, `DELETE FROM baton_dedup WHERE queue_id = $1 AND accepted_at <= $2`, int64(p.QueueID), p.DedupCutoff); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `SELECT dedup_key, message_id, sequence_number FROM baton_dedup WHERE queue_id = $1 AND dedup_key = ANY($2)`,
		int64(p.QueueID), p.DedupKeys)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]baton.MessageSent)
	var key string
	var sent baton.MessageSent
	_, err = pgx.ForEachRow(rows, []any{&key, &sent.MessageID, &sent.SequenceNumber}, func() error {
		sent.Duplicate = true
		seen[key] = sent
		return nil
	})
	if err != nil {
		return nil, err
	}

	var store []*baton.Message
	b := &pgx.Batch{}
	for i, m := range p.Messages {
		key := p.DedupKeys[i]
		if orig, ok := seen[key]; ok {
			out[i] = orig
			continue
		}
		seq++
		c := *m
		c.SequenceNumber = formatSeq(seq)
		store = append(store, &c)
		out[i] = baton.MessageSent{MessageID: c.ID, SequenceNumber: c.SequenceNumber}
		seen[key] = baton.MessageSent{MessageID: c.ID, SequenceNumber: c.SequenceNumber, Duplicate: true}
		b.Queue(`
			INSERT INTO baton_dedup (queue_id, dedup_key, message_id, sequence_number, accepted_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (queue_id, dedup_key) DO UPDATE
			SET message_id = excluded.message_id, sequence_number = excluded.sequence_number, accepted_at = excluded.accepted_at`,
			int64(p.QueueID), key, c.ID, c.SequenceNumber, c.SentAt)
	}
	if len(store) == 0 {
		return nil, nil
	}
	b.Queue(`UPDATE baton_queues SET last_seq = $2 WHERE id = $1`, int64(p.QueueID), seq)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return store, nil
}

// sendTokenTTL is how long a send's token is kept: far longer than a send
// may retry (Options.RetryFor, each run bounded by roundTimeout).
const sendTokenTTL = 5 * time.Minute

// tokensPruneEvery is how often a server forgets old send tokens.
const tokensPruneEvery = 30 * time.Second

// sendToken names a standard-queue send in baton_send_tokens: its queue and
// its first message's id. An id is unique within its queue (the engine
// makes a new one for each send; an import keeps the exported id, in a
// queue created for it), not across queues.
func sendToken(queueID uint64, msgs []*baton.Message) string {
	return strconv.FormatUint(queueID, 10) + "/" + msgs[0].ID
}

// tokensPruneDue reports whether the round sent at now should forget the
// old send tokens, at most once per tokensPruneEvery on this server.
func (s *Store) tokensPruneDue(now time.Time) bool {
	next := s.tokensPruneAt.Load()
	return now.UnixNano() >= next && s.tokensPruneAt.CompareAndSwap(next, now.Add(tokensPruneEvery).UnixNano())
}
