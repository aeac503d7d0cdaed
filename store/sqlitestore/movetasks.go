package sqlitestore

import (
	"context"
	"fmt"

	"github.com/baton-sqs/baton"
)

// MoveTaskSave queues the task's row and returns once it is committed.
// Saves of one task must not run concurrently: the last one queued wins.
func (s *Store) MoveTaskSave(ctx context.Context, t baton.MoveTask) error {
	return s.w.enqueue([]change{&moveTaskPut{t: t}}, nil).wait(ctx)
}

// MoveTaskList reads every task from the database: a save returns only
// once committed, so the database holds each one acknowledged.
func (s *Store) MoveTaskList(ctx context.Context) ([]baton.MoveTask, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT handle, source_arn, destination_arn, max_per_second,
		status, moved, to_move, failure_reason, started_at FROM move_tasks`)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list move tasks: %w", err)
	}
	defer rows.Close()
	var out []baton.MoveTask
	for rows.Next() {
		var (
			t       baton.MoveTask
			rate    int64
			started int64
		)
		if err := rows.Scan(&t.Handle, &t.SourceARN, &t.DestinationARN, &rate, &t.Status, &t.Moved, &t.ToMove,
			&t.FailureReason, &started); err != nil {
			return nil, fmt.Errorf("sqlitestore: list move tasks: %w", err)
		}
		t.MaxPerSecond, t.StartedAt = int(rate), decTime(started)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: list move tasks: %w", err)
	}
	return out, nil
}
