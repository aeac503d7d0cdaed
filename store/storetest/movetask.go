package storetest

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// moveTaskFixture is a task with every field set.
func moveTaskFixture(handle string) baton.MoveTask {
	return baton.MoveTask{
		Handle:         handle,
		SourceARN:      "arn:aws:sqs:us-east-1:" + Account + ":dlq",
		DestinationARN: "arn:aws:sqs:us-east-1:" + Account + ":orders",
		MaxPerSecond:   17,
		Status:         "FAILED",
		Moved:          3,
		ToMove:         1 << 40,
		FailureReason:  "AWS.SimpleQueueService.NonExistentQueue",
		StartedAt:      at(1500 * time.Millisecond),
	}
}

// mustListMoveTasks returns the store's tasks by handle.
func mustListMoveTasks(t *testing.T, s baton.Store) []baton.MoveTask {
	t.Helper()
	got, err := s.MoveTaskList(t.Context())
	if err != nil {
		t.Fatalf("MoveTaskList: %v", err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Handle < got[j].Handle })
	return got
}

func checkMoveTasks(t *testing.T, got, want []baton.MoveTask) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("MoveTaskList returned %d tasks, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		eqTime := g.StartedAt.Equal(w.StartedAt)
		g.StartedAt, w.StartedAt = time.Time{}, time.Time{}
		if g != w || !eqTime {
			t.Errorf("task %d: got %+v (started %v), want %+v (started %v)", i, got[i], got[i].StartedAt, want[i], want[i].StartedAt)
		}
	}
}

// testMoveTaskRoundTrip saves tasks and lists them back, every field kept,
// including the empty destination and unset rate of a task that sets none.
func testMoveTaskRoundTrip(t *testing.T, s baton.Store) {
	checkMoveTasks(t, mustListMoveTasks(t, s), nil)
	full := moveTaskFixture("task-a")
	bare := baton.MoveTask{
		Handle: "task-b", SourceARN: full.SourceARN, Status: "RUNNING", ToMove: 5, StartedAt: at(2 * time.Second),
	}
	for _, task := range []baton.MoveTask{full, bare} {
		if err := s.MoveTaskSave(t.Context(), task); err != nil {
			t.Fatalf("MoveTaskSave %s: %v", task.Handle, err)
		}
	}
	checkMoveTasks(t, mustListMoveTasks(t, s), []baton.MoveTask{full, bare})
}

// testMoveTaskReplaceByHandle saves a task twice: the second save replaces
// the first and leaves other tasks alone.
func testMoveTaskReplaceByHandle(t *testing.T, s baton.Store) {
	first := moveTaskFixture("task-a")
	first.Status, first.Moved, first.FailureReason = "RUNNING", 0, ""
	other := moveTaskFixture("task-b")
	for _, task := range []baton.MoveTask{first, other} {
		if err := s.MoveTaskSave(t.Context(), task); err != nil {
			t.Fatalf("MoveTaskSave %s: %v", task.Handle, err)
		}
	}
	second := first
	second.Status, second.Moved, second.FailureReason = "CANCELLED", 2, "reason"
	if err := s.MoveTaskSave(t.Context(), second); err != nil {
		t.Fatalf("MoveTaskSave again: %v", err)
	}
	checkMoveTasks(t, mustListMoveTasks(t, s), []baton.MoveTask{second, other})
}

// testMoveTaskKeepsNewest saves more finished tasks of one source than are
// kept: each save drops the finished ones beyond the newest
// baton.MaxMoveTasksKept of that source, and nothing of another source or
// an unfinished task.
func testMoveTaskKeepsNewest(t *testing.T, s baton.Store) {
	other := moveTaskFixture("other-source")
	other.SourceARN = "arn:aws:sqs:us-east-1:" + Account + ":another-dlq"
	other.StartedAt = at(0)
	// Older than every finished one, but running (as after a takeover).
	running := moveTaskFixture("running")
	running.Status, running.FailureReason, running.StartedAt = "RUNNING", "", at(time.Second)
	saved := []baton.MoveTask{other, running}
	for i := range baton.MaxMoveTasksKept + 3 {
		task := moveTaskFixture(fmt.Sprintf("task-%02d", i))
		task.StartedAt = at(time.Duration(10+i) * time.Second)
		saved = append(saved, task)
	}
	for _, task := range saved {
		if err := s.MoveTaskSave(t.Context(), task); err != nil {
			t.Fatalf("MoveTaskSave %s: %v", task.Handle, err)
		}
	}
	// Handles sort as: other-source, running, task-03 … task-12.
	want := append([]baton.MoveTask{other, running}, saved[len(saved)-baton.MaxMoveTasksKept:]...)
	sort.Slice(want, func(i, j int) bool { return want[i].Handle < want[j].Handle })
	checkMoveTasks(t, mustListMoveTasks(t, s), want)
}
