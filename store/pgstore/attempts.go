package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

// AttemptPut records a FIFO receive made with a ReceiveRequestAttemptId,
// for every server on the database, and forgets those older than p.Forget.
func (s *Store) AttemptPut(ctx context.Context, p baton.Attempt) error {
	ids := make([]string, len(p.Leases))
	epochs := make([]int64, len(p.Leases))
	for i, l := range p.Leases {
		ids[i], epochs[i] = l.MessageID, int64(l.Epoch)
	}
	err := s.retryWrite(ctx, func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `
			WITH gone AS (DELETE FROM baton_receive_attempts WHERE leased_at < $6)
			INSERT INTO baton_receive_attempts (queue_id, attempt_id, leased_at, message_ids, epochs)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (queue_id, attempt_id) DO UPDATE SET
				leased_at = excluded.leased_at, message_ids = excluded.message_ids, epochs = excluded.epochs`,
			int64(p.QueueID), p.ID, p.LeasedAt, ids, epochs, p.Forget)
		return err
	}, nil)
	if err != nil {
		return fmt.Errorf("pgstore: record receive attempt: %w", err)
	}
	return nil
}

// AttemptGet returns the receive attempt of queueID named id made at or
// after since, if any server recorded one.
func (s *Store) AttemptGet(ctx context.Context, queueID uint64, id string, since time.Time) (baton.Attempt, bool, error) {
	at := baton.Attempt{QueueID: queueID, ID: id}
	var (
		ids    []string
		epochs []int64
	)
	err := s.retry(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `
		SELECT leased_at, message_ids, epochs FROM baton_receive_attempts
		WHERE queue_id = $1 AND attempt_id = $2 AND leased_at >= $3`,
			int64(queueID), id, since).Scan(&at.LeasedAt, &ids, &epochs)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return baton.Attempt{}, false, nil
	}
	if err != nil {
		return baton.Attempt{}, false, fmt.Errorf("pgstore: read receive attempt: %w", err)
	}
	if len(ids) != len(epochs) {
		return baton.Attempt{}, false, fmt.Errorf("pgstore: receive attempt %q: %d message ids, %d epochs", id, len(ids), len(epochs))
	}
	for i := range ids {
		at.Leases = append(at.Leases, baton.LeaseRef{MessageID: ids[i], Epoch: uint32(epochs[i])})
	}
	return at, true, nil
}
