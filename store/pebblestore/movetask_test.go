package pebblestore_test

import (
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/store/storetest"
)

// TestReopenFailsUnfinishedMoveTasks saves a RUNNING and a COMPLETED task,
// closes the store and starts an engine over it reopened: the running task
// is FAILED, saved so, and both are listed, newest first.
func TestReopenFailsUnfinishedMoveTasks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	storetest.MustCreateQueue(t, s, storetest.NewQueue(storetest.QueueID(1), "dlq"))
	arn := "arn:aws:sqs:us-east-1:" + storetest.Account + ":dlq"
	running := baton.MoveTask{
		Handle: "running", SourceARN: arn, MaxPerSecond: 5, Status: engine.TaskRunning,
		Moved: 2, ToMove: 9, StartedAt: at(time.Minute),
	}
	done := baton.MoveTask{
		Handle: "done", SourceARN: arn, DestinationARN: arn + "-2", Status: engine.TaskCompleted,
		Moved: 4, ToMove: 4, StartedAt: at(0),
	}
	for _, task := range []baton.MoveTask{done, running} {
		if err := s.MoveTaskSave(t.Context(), task); err != nil {
			t.Fatalf("MoveTaskSave %s: %v", task.Handle, err)
		}
	}
	s = reopen(t, s, dir)

	e, err := engine.New(engine.Config{Store: s})
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	defer e.Close()
	limit := 10
	got, err := e.ListMessageMoveTasks(t.Context(), "", storetest.Account, arn, &limit)
	if err != nil {
		t.Fatalf("ListMessageMoveTasks: %v", err)
	}
	failed := running
	failed.Status, failed.FailureReason = engine.TaskFailed, "The server restarted before the task finished."
	want := []baton.MoveTask{failed, done}
	if len(got) != len(want) {
		t.Fatalf("listed %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].StartedAt.Equal(want[i].StartedAt) {
			got[i].StartedAt = want[i].StartedAt
		}
		if got[i] != want[i] {
			t.Errorf("task %d: got %+v, want %+v", i, got[i], want[i])
		}
	}

	// The failure was saved back: the store itself now says FAILED.
	stored, err := s.MoveTaskList(t.Context())
	if err != nil {
		t.Fatalf("MoveTaskList: %v", err)
	}
	for _, task := range stored {
		if task.Handle == running.Handle && (task.Status != engine.TaskFailed || task.FailureReason != failed.FailureReason) {
			t.Errorf("stored task %+v, want FAILED with the restart reason", task)
		}
	}
}
