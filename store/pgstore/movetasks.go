package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

// MoveTaskSave inserts the task or replaces the one of its handle.
func (s *Store) MoveTaskSave(ctx context.Context, t baton.MoveTask) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO baton_move_tasks (handle, source_arn, destination_arn, max_per_second, status, moved, to_move,
			failure_reason, started_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (handle) DO UPDATE SET source_arn = excluded.source_arn, destination_arn = excluded.destination_arn,
			max_per_second = excluded.max_per_second, status = excluded.status, moved = excluded.moved,
			to_move = excluded.to_move, failure_reason = excluded.failure_reason, started_at = excluded.started_at`,
		t.Handle, t.SourceARN, t.DestinationARN, t.MaxPerSecond, t.Status, t.Moved, t.ToMove,
		t.FailureReason, nullTime(t.StartedAt))
	if err != nil {
		return fmt.Errorf("pgstore: save move task: %w", err)
	}
	return nil
}

// MoveTaskList returns every task, in no particular order.
func (s *Store) MoveTaskList(ctx context.Context) ([]baton.MoveTask, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT handle, source_arn, destination_arn, max_per_second, status, moved, to_move, failure_reason, started_at
		FROM baton_move_tasks`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list move tasks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (baton.MoveTask, error) {
		var (
			t       baton.MoveTask
			started *time.Time
		)
		err := row.Scan(&t.Handle, &t.SourceARN, &t.DestinationARN, &t.MaxPerSecond, &t.Status, &t.Moved, &t.ToMove,
			&t.FailureReason, &started)
		t.StartedAt = timeOf(started)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: list move tasks: %w", err)
	}
	return out, nil
}
