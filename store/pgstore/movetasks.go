package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-sqs/baton"
)

// MoveTaskSave inserts the task or replaces the one of its handle. Being
// shared by several servers (baton.TaskLocker), it returns baton.ErrExists
// when the task would be a second active one of its source, and leaves a
// stored task alone when the save would revive a finished one or turn a
// CANCELLING one back to RUNNING; Moved never goes down, since MessageMove
// counts moves as they commit.
func (s *Store) MoveTaskSave(ctx context.Context, t baton.MoveTask) error {
	// An upsert: a rerun after a lost answer stores the same.
	return s.retry(ctx, func(ctx context.Context) error { return saveMoveTask(ctx, s.pool, t) })
}

// execer is a pool or a connection.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func saveMoveTask(ctx context.Context, db execer, t baton.MoveTask) error {
	_, err := db.Exec(ctx, `
		INSERT INTO baton_move_tasks (handle, source_arn, destination_arn, max_per_second, status, moved, to_move,
			failure_reason, started_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (handle) DO UPDATE SET source_arn = excluded.source_arn, destination_arn = excluded.destination_arn,
			max_per_second = excluded.max_per_second, status = excluded.status,
			moved = greatest(baton_move_tasks.moved, excluded.moved),
			to_move = excluded.to_move, failure_reason = excluded.failure_reason, started_at = excluded.started_at
		WHERE baton_move_tasks.status IN ('RUNNING', 'CANCELLING')
			AND NOT (baton_move_tasks.status = 'CANCELLING' AND excluded.status = 'RUNNING')`,
		t.Handle, t.SourceARN, t.DestinationARN, t.MaxPerSecond, t.Status, t.Moved, t.ToMove,
		t.FailureReason, nullTime(t.StartedAt))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "baton_move_tasks_one_active" {
		return baton.ErrExists
	}
	if err != nil {
		return fmt.Errorf("pgstore: save move task: %w", err)
	}
	// Tasks that no listing shows again: finished, and older than the
	// newest kept of their source.
	if _, err := db.Exec(ctx, `
		DELETE FROM baton_move_tasks WHERE source_arn = $1 AND status NOT IN ('RUNNING', 'CANCELLING')
			AND handle NOT IN (SELECT handle FROM baton_move_tasks WHERE source_arn = $1
				ORDER BY started_at DESC NULLS LAST, handle LIMIT $2)`, t.SourceARN, baton.MaxMoveTasksKept); err != nil {
		return fmt.Errorf("pgstore: prune move tasks: %w", err)
	}
	return nil
}

// MoveTaskList returns every task, in no particular order.
func (s *Store) MoveTaskList(ctx context.Context) ([]baton.MoveTask, error) {
	var out []baton.MoveTask
	err := s.retry(ctx, func(ctx context.Context) error {
		var err error
		out, err = listMoveTasks(ctx, s.pool)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: list move tasks: %w", err)
	}
	return out, nil
}

// listMoveTasks reads every task.
func listMoveTasks(ctx context.Context, db *pgxpool.Pool) ([]baton.MoveTask, error) {
	rows, err := db.Query(ctx, `
		SELECT handle, source_arn, destination_arn, max_per_second, status, moved, to_move, failure_reason, started_at
		FROM baton_move_tasks`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (baton.MoveTask, error) {
		var (
			t       baton.MoveTask
			started *time.Time
		)
		err := row.Scan(&t.Handle, &t.SourceARN, &t.DestinationARN, &t.MaxPerSecond, &t.Status, &t.Moved, &t.ToMove,
			&t.FailureReason, &started)
		t.StartedAt = timeOf(started)
		return t, err
	})
}
