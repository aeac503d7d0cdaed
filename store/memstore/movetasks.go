package memstore

import (
	"context"
	"slices"

	"github.com/baton-sqs/baton"
)

// MoveTaskSave stores the task, replacing the one of the same Handle, and
// drops the finished tasks of its source beyond the newest
// baton.MaxMoveTasksKept.
func (s *Store) MoveTaskSave(_ context.Context, t baton.MoveTask) error {
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	s.tasks[t.Handle] = t
	s.pruneTasks(t.SourceARN)
	return nil
}

// pruneTasks drops the finished tasks of source beyond the newest
// baton.MaxMoveTasksKept; the caller holds tasksMu.
func (s *Store) pruneTasks(source string) {
	var same []baton.MoveTask
	for _, o := range s.tasks {
		if o.SourceARN == source {
			same = append(same, o)
		}
	}
	if len(same) <= baton.MaxMoveTasksKept {
		return
	}
	slices.SortFunc(same, baton.CompareMoveTasks)
	for _, o := range same[baton.MaxMoveTasksKept:] {
		if o.Finished() {
			delete(s.tasks, o.Handle)
		}
	}
}

// MoveTaskList returns every stored task, in no particular order.
func (s *Store) MoveTaskList(context.Context) ([]baton.MoveTask, error) {
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	out := make([]baton.MoveTask, 0, len(s.tasks))
	for _, t := range s.tasks {
		out = append(out, t)
	}
	return out, nil
}
