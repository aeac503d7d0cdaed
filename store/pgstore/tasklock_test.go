package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/storetest"
)

// TestTaskLockAcrossStores: a task lock is exclusive among the stores of one
// database, is taken again once released, and is released when its
// holder's store closes, as when its server dies.
func TestTaskLockAcrossStores(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	ctx := t.Context()
	la, err := a.TaskLock(ctx, "task-1")
	if err != nil || la == nil {
		t.Fatalf("first TaskLock: %v, %v; want the lock", la, err)
	}
	if lb, err := b.TaskLock(ctx, "task-1"); err != nil || lb != nil {
		t.Fatalf("TaskLock held elsewhere: %v, %v; want nil, nil", lb, err)
	}
	if la2, err := a.TaskLock(ctx, "task-1"); err != nil || la2 != nil {
		t.Fatalf("TaskLock held by the same store: %v, %v; want nil, nil", la2, err)
	}
	other, err := b.TaskLock(ctx, "task-2")
	if err != nil || other == nil {
		t.Fatalf("TaskLock of another name: %v, %v; want the lock", other, err)
	}
	other.Release()
	la.Release()
	la.Release() // twice is fine
	lb, err := b.TaskLock(ctx, "task-1")
	if err != nil || lb == nil {
		t.Fatalf("TaskLock after release: %v, %v; want the lock", lb, err)
	}

	// b dies holding it: a gets it once b's session ends.
	task := baton.MoveTask{Handle: "task-1", SourceARN: "arn:aws:sqs:us-east-1:" + storetest.Account + ":dlq",
		Status: "RUNNING", ToMove: 3, StartedAt: base}
	if err := lb.MoveTaskSave(ctx, task); err != nil {
		t.Fatalf("save through the lock: %v", err)
	}
	b.Close()
	if err := lb.MoveTaskSave(ctx, task); err == nil {
		t.Fatal("save through the lock of a closed store succeeded")
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		la, err = a.TaskLock(ctx, "task-1")
		if err == nil && la == nil {
			err = errors.New("lock still held after its store closed")
		}
		return err
	})
	la.Release()
}

// TestMoveTaskSaveShared: the store keeps one active task per source,
// never revives a finished task nor a cancelling one, never lowers Moved,
// and MessageMove counts a task's moves.
func TestMoveTaskSaveShared(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, pgtest.MustDatabase(t))
	ctx := t.Context()
	arn := "arn:aws:sqs:us-east-1:" + storetest.Account + ":dlq"
	first := baton.MoveTask{Handle: "first", SourceARN: arn, Status: "RUNNING", ToMove: 5, StartedAt: base}
	save := func(task baton.MoveTask) error { return s.MoveTaskSave(ctx, task) }
	get := func(handle string) baton.MoveTask {
		t.Helper()
		all, err := s.MoveTaskList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range all {
			if task.Handle == handle {
				return task
			}
		}
		t.Fatalf("no task %s", handle)
		return baton.MoveTask{}
	}
	if err := save(first); err != nil {
		t.Fatal(err)
	}
	second := first
	second.Handle = "second"
	if err := save(second); !errors.Is(err, baton.ErrExists) {
		t.Fatalf("second active task of the source: %v, want ErrExists", err)
	}
	cancelling := first
	cancelling.Status, cancelling.Moved = "CANCELLING", 2
	if err := save(cancelling); err != nil {
		t.Fatal(err)
	}
	if err := save(second); !errors.Is(err, baton.ErrExists) {
		t.Fatalf("task of a source with a cancelling one: %v, want ErrExists", err)
	}
	stale := first // a save of the runner that has not seen the cancel
	stale.Moved = 1
	if err := save(stale); err != nil {
		t.Fatal(err)
	}
	if got := get("first"); got.Status != "CANCELLING" || got.Moved != 2 {
		t.Fatalf("after a stale RUNNING save: %s with %d moved, want CANCELLING with 2", got.Status, got.Moved)
	}
	cancelled := cancelling
	cancelled.Status = "CANCELLED"
	if err := save(cancelled); err != nil {
		t.Fatal(err)
	}
	if err := save(cancelling); err != nil {
		t.Fatal(err)
	}
	if got := get("first"); got.Status != "CANCELLED" {
		t.Fatalf("finished task saved again as CANCELLING: %s, want CANCELLED kept", got.Status)
	}
	if err := save(second); err != nil {
		t.Fatalf("task of a source whose task finished: %v", err)
	}

	src, dst := storetest.NewQueue(storetest.QueueID(1), "dlq"), storetest.NewQueue(storetest.QueueID(2), "orders")
	storetest.MustCreateQueue(t, s, src)
	storetest.MustCreateQueue(t, s, dst)
	storetest.MustSend(t, s, src.ID, storetest.NewMessage(1, base), storetest.NewMessage(2, base))
	msgs, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: src.ID, Now: base, Max: 10, VisibleAt: base.Add(time.Minute)})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("receive: %d, %v", len(msgs), err)
	}
	for _, m := range append(msgs, msgs[0]) { // the last move finds it gone
		if _, err := s.MessageMove(ctx, baton.MessageMoveParams{QueueID: src.ID, MessageID: m.ID, Epoch: m.Epoch,
			ToQueueID: dst.ID, Now: base, MoveTask: "second"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := get("second"); got.Moved != 2 {
		t.Fatalf("task counted %d moves, want 2", got.Moved)
	}
}
