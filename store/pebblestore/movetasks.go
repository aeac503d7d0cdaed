package pebblestore

import (
	"context"
	"fmt"

	"github.com/baton-sqs/baton"
)

// MoveTaskSave queues the task and returns once it is committed. Saves of
// one task must not run concurrently: the last one queued wins.
func (s *Store) MoveTaskSave(ctx context.Context, t baton.MoveTask) error {
	if err := s.writable(); err != nil {
		return err
	}
	return s.w.enqueue([]change{&moveTaskPut{t: t}}, nil).wait(ctx)
}

// MoveTaskList reads every task from the log, and answers once every
// commit it may have seen is done.
func (s *Store) MoveTaskList(ctx context.Context) ([]baton.MoveTask, error) {
	var out []baton.MoveTask
	err := s.scan([]byte{kindTask}, []byte{kindTask + 1}, func(k, v []byte) error {
		t, err := decodeTask(string(k[1:]), v)
		if err != nil {
			return fmt.Errorf("move task %q: %w", k[1:], err)
		}
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pebblestore: list move tasks: %w", err)
	}
	if err := s.w.enqueue(nil, nil).wait(ctx); err != nil {
		return nil, err
	}
	return out, nil
}
