package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// The shared suite: what makes several servers on one store act as one
// queue (baton.SharedStore), checked through two handles on one backend,
// as two servers would hold them. A store may deliver wake-ups and ledger
// batches in the background, so the suite waits for them, for at most
// deliveryWait of real time; it never waits on a lease.

// deliveryWait bounds the wait for a wake-up or a ledger batch, or for a
// closed handle's task lock to come free.
const deliveryWait = 10 * time.Second

// RunShared runs the shared suite. Each subtest calls openPair once for two
// handles on one fresh, empty backend, and runs in parallel with the
// others; RunShared closes both when the subtest ends (a subtest may close
// one first, as a server dies). The handles must be ready to hear each
// other when openPair returns: a store whose link to the others starts in
// the background returns once it is up.
func RunShared(t *testing.T, openPair func(t *testing.T) (a, b baton.SharedStore)) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, a, b baton.SharedStore)
	}{
		{"WakeOnSend", testSharedWakeOnSend},
		{"WakeOnReleaseAndMove", testSharedWakeOnReleaseAndMove},
		{"WakeOnFIFODelete", testSharedWakeOnFIFODelete},
		{"TaskLockExclusive", testSharedTaskLockExclusive},
		{"TaskLockTakeover", testSharedTaskLockTakeover},
		{"GroupLock", testSharedGroupLock},
		{"MoveTaskSave", testSharedMoveTaskSave},
		{"AttemptReplay", testSharedAttemptReplay},
		{"FIFOGroupOrder", testSharedFIFOGroupOrder},
		{"LedgerRelay", testSharedLedgerRelay},
		{"Health", testSharedHealth},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := openPair(t)
			t.Cleanup(func() {
				a.Close()
				b.Close()
			})
			tc.fn(t, a, b)
		})
	}
}

// wakeups subscribes to s's wake-ups and returns expect, which fails the
// test unless s is woken next for queue want (what names the cause).
func wakeups(t *testing.T, s baton.SharedStore) func(what string, want uint64) {
	woken := make(chan uint64, 100)
	s.Subscribe(func(id uint64) { woken <- id })
	return func(what string, want uint64) {
		t.Helper()
		select {
		case got := <-woken:
			if got != want {
				t.Fatalf("%s: woken for queue %#x, want %#x", what, got, want)
			}
		case <-time.After(deliveryWait):
			t.Fatalf("%s: no wake-up", what)
		}
	}
}

// testSharedWakeOnSend: a send through one handle wakes the subscribers
// of the other with the queue's id.
func testSharedWakeOnSend(t *testing.T, a, b baton.SharedStore) {
	expect := wakeups(t, a)
	q := NewQueue(QueueID(7), "wake")
	MustCreateQueue(t, b, q)
	MustSend(t, b, q.ID, NewMessage(1, base))
	expect("send", q.ID)
}

// testSharedWakeOnReleaseAndMove: besides sends, a release (one or in a
// batch) and a move wake the other handle on the queue that got a
// receivable message; a lease that only moves its end wakes nobody.
func testSharedWakeOnReleaseAndMove(t *testing.T, a, b baton.SharedStore) {
	expect := wakeups(t, a)
	q, dlq := NewQueue(QueueID(7), "wake"), NewQueue(QueueID(8), "wake-dlq")
	MustCreateQueue(t, b, q)
	MustCreateQueue(t, b, dlq)
	MustSend(t, b, q.ID, NewMessage(1, base), NewMessage(2, base), NewMessage(3, base))
	expect("send", q.ID)
	got := MustReceive(t, b, baton.MessageReceiveParams{QueueID: q.ID, Now: base, Max: 3, VisibleAt: at(time.Minute),
		RetentionCutoff: at(-time.Hour)})
	if len(got) != 3 {
		t.Fatalf("received %d messages, want 3", len(got))
	}
	// Extending a lease makes nothing receivable: no wake-up, so the next
	// one heard is for the other queue's send.
	MustChangeVisibility(t, b, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: got[0].ID, Epoch: got[0].Epoch,
		Now: base, VisibleAt: at(time.Hour)})
	MustSend(t, b, dlq.ID, NewMessage(4, base))
	expect("send to the other queue after an extension", dlq.ID)
	MustChangeVisibility(t, b, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: got[1].ID, Epoch: got[1].Epoch,
		Now: base, VisibleAt: base})
	expect("release", q.ID)
	if _, err := b.MessageChangeVisibilityBatch(t.Context(), baton.MessageChangeVisibilityBatchParams{QueueID: q.ID, Now: base,
		Entries: []baton.VisibilityChange{{MessageID: got[2].ID, Epoch: got[2].Epoch, VisibleAt: base}}}); err != nil {
		t.Fatal(err)
	}
	expect("release in a batch", q.ID)
	if _, err := b.MessageMove(t.Context(), baton.MessageMoveParams{QueueID: q.ID, MessageID: got[1].ID, ToQueueID: dlq.ID, Now: base}); err != nil {
		t.Fatal(err)
	}
	expect("move", dlq.ID)
}

// testSharedWakeOnFIFODelete: deleting the in-flight head of a FIFO group
// makes the group's next message receivable, so it wakes the other
// handle; deleting a standard queue's message makes nothing receivable and
// wakes nobody.
func testSharedWakeOnFIFODelete(t *testing.T, a, b baton.SharedStore) {
	expect := wakeups(t, a)
	q, std := NewFIFOQueue(QueueID(7), "wake.fifo"), NewQueue(QueueID(8), "wake-std")
	MustCreateQueue(t, b, q)
	MustCreateQueue(t, b, std)
	MustSendFIFO(t, b, q.ID, base, NewGroupMessage(1, "g", base), NewGroupMessage(2, "g", base))
	expect("FIFO send", q.ID)
	MustSend(t, b, std.ID, NewMessage(3, base))
	expect("standard send", std.ID)
	recv := func(id uint64) *baton.Message {
		t.Helper()
		got := MustReceive(t, b, baton.MessageReceiveParams{QueueID: id, Now: base, Max: 1, VisibleAt: at(time.Minute),
			RetentionCutoff: at(-time.Hour)})
		if len(got) != 1 {
			t.Fatalf("received %d messages, want 1", len(got))
		}
		return got[0]
	}
	head, m := recv(q.ID), recv(std.ID)
	if _, err := b.MessageDeleteBatch(t.Context(), baton.MessageDeleteBatchParams{QueueID: std.ID, Now: base,
		Entries: []baton.LeaseRef{{MessageID: m.ID, Epoch: m.Epoch}}}); err != nil {
		t.Fatal(err)
	}
	MustDelete(t, b, baton.MessageDeleteParams{QueueID: q.ID, MessageID: head.ID, Epoch: head.Epoch, Now: base, RequireLive: true})
	expect("FIFO delete of the group's head (after a standard delete, which wakes nobody)", q.ID)
}

// testSharedTaskLockExclusive: a task lock is exclusive among the handles,
// the holder's own included, and is taken again once released.
func testSharedTaskLockExclusive(t *testing.T, a, b baton.SharedStore) {
	ctx := t.Context()
	la, err := a.TaskLock(ctx, "task-1")
	if err != nil || la == nil {
		t.Fatalf("first TaskLock: %v, %v; want the lock", la, err)
	}
	if lb, err := b.TaskLock(ctx, "task-1"); err != nil || lb != nil {
		t.Fatalf("TaskLock held through the other handle: %v, %v; want nil, nil", lb, err)
	}
	if la2, err := a.TaskLock(ctx, "task-1"); err != nil || la2 != nil {
		t.Fatalf("TaskLock held through the same handle: %v, %v; want nil, nil", la2, err)
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
	lb.Release()
}

// testSharedTaskLockTakeover: the holder's handle closing, as its server
// dies, frees the lock for the other handle, and a save through the dead
// holder's lock fails; the other handle sees what the holder saved.
func testSharedTaskLockTakeover(t *testing.T, a, b baton.SharedStore) {
	ctx := t.Context()
	lb, err := b.TaskLock(ctx, "task-1")
	if err != nil || lb == nil {
		t.Fatalf("TaskLock: %v, %v; want the lock", lb, err)
	}
	task := baton.MoveTask{Handle: "task-1", SourceARN: "arn:aws:sqs:us-east-1:" + Account + ":dlq",
		Status: "RUNNING", Moved: 2, ToMove: 3, StartedAt: base}
	if err := lb.MoveTaskSave(ctx, task); err != nil {
		t.Fatalf("save through the lock: %v", err)
	}
	b.Close()
	if err := lb.MoveTaskSave(ctx, task); err == nil {
		t.Fatal("save through the lock of a closed handle succeeded")
	}
	var la baton.TaskLock
	poll.For(t, deliveryWait, func() error {
		la, err = a.TaskLock(ctx, "task-1")
		if err == nil && la == nil {
			err = errors.New("lock still held after its handle closed")
		}
		return err
	})
	defer la.Release()
	tasks, err := a.MoveTaskList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].Moved != 2 {
		t.Fatalf("the task as the taker sees it: %+v; want task-1 with 2 moved", tasks)
	}
	task.Moved = 3
	if err := la.MoveTaskSave(ctx, task); err != nil {
		t.Fatalf("save through the taken-over lock: %v", err)
	}
}

// testSharedGroupLock: a group lock is held by one handle at a time: the
// other's GroupLock waits for the unlock, fails with ErrUnavailable when
// its context ends first, and gets the lock once the holder's handle
// closes; another name is free meanwhile.
func testSharedGroupLock(t *testing.T, a, b baton.SharedStore) {
	unlockA, err := a.GroupLock(t.Context(), "g")
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.GroupLock(t.Context(), "h")
	if err != nil {
		t.Fatalf("another name, while g is held: %v", err)
	}
	other()

	got := make(chan func(), 1)
	go func() {
		unlock, err := b.GroupLock(t.Context(), "g")
		if err != nil {
			t.Errorf("GroupLock once unlocked: %v", err)
		}
		got <- unlock
	}()
	select {
	case <-got:
		t.Fatal("both handles hold the lock")
	case <-time.After(50 * time.Millisecond):
	}
	unlockA()
	var unlockB func()
	select {
	case unlockB = <-got:
	case <-time.After(deliveryWait):
		t.Fatal("the lock was not handed over after its unlock")
	}
	if unlockB == nil {
		return
	}

	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := a.GroupLock(short, "g"); !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("GroupLock while held, its context ending: %v, want ErrUnavailable", err)
	}
	b.Close()
	ctx, cancel2 := context.WithTimeout(t.Context(), deliveryWait)
	defer cancel2()
	unlock, err := a.GroupLock(ctx, "g")
	if err != nil {
		t.Fatalf("GroupLock after the holder's handle closed: %v", err)
	}
	unlock()
	unlockB() // a closed handle's unlock is harmless
}

// testSharedMoveTaskSave: the handles keep one active task per source,
// never revive a finished task nor a cancelling one, never lower Moved,
// and MessageMove counts a task's moves, whichever handle saves or moves.
func testSharedMoveTaskSave(t *testing.T, a, b baton.SharedStore) {
	ctx := t.Context()
	arn := "arn:aws:sqs:us-east-1:" + Account + ":dlq"
	first := baton.MoveTask{Handle: "first", SourceARN: arn, Status: "RUNNING", ToMove: 5, StartedAt: base}
	get := func(handle string) baton.MoveTask {
		t.Helper()
		all, err := b.MoveTaskList(ctx)
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
	if err := a.MoveTaskSave(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := first
	second.Handle = "second"
	if err := b.MoveTaskSave(ctx, second); !errors.Is(err, baton.ErrExists) {
		t.Fatalf("second active task of the source: %v, want ErrExists", err)
	}
	cancelling := first
	cancelling.Status, cancelling.Moved = "CANCELLING", 2
	if err := b.MoveTaskSave(ctx, cancelling); err != nil {
		t.Fatal(err)
	}
	if err := b.MoveTaskSave(ctx, second); !errors.Is(err, baton.ErrExists) {
		t.Fatalf("task of a source with a cancelling one: %v, want ErrExists", err)
	}
	stale := first // a save of the runner that has not seen the cancel
	stale.Moved = 1
	if err := a.MoveTaskSave(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if got := get("first"); got.Status != "CANCELLING" || got.Moved != 2 {
		t.Fatalf("after a stale RUNNING save: %s with %d moved, want CANCELLING with 2", got.Status, got.Moved)
	}
	cancelled := cancelling
	cancelled.Status = "CANCELLED"
	if err := a.MoveTaskSave(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	if err := b.MoveTaskSave(ctx, cancelling); err != nil {
		t.Fatal(err)
	}
	if got := get("first"); got.Status != "CANCELLED" {
		t.Fatalf("finished task saved again as CANCELLING: %s, want CANCELLED kept", got.Status)
	}
	if err := b.MoveTaskSave(ctx, second); err != nil {
		t.Fatalf("task of a source whose task finished: %v", err)
	}

	src, dst := NewQueue(QueueID(1), "dlq"), NewQueue(QueueID(2), "orders")
	MustCreateQueue(t, a, src)
	MustCreateQueue(t, a, dst)
	MustSend(t, a, src.ID, NewMessage(1, base), NewMessage(2, base))
	msgs := MustReceive(t, b, baton.MessageReceiveParams{QueueID: src.ID, Now: base, Max: 10, VisibleAt: at(time.Minute),
		RetentionCutoff: at(-time.Hour)})
	if len(msgs) != 2 {
		t.Fatalf("received %d messages, want 2", len(msgs))
	}
	for i, m := range append(msgs, msgs[0]) { // the last move finds it gone
		s := []baton.SharedStore{a, b}[i%2]
		if _, err := s.MessageMove(ctx, baton.MessageMoveParams{QueueID: src.ID, MessageID: m.ID, Epoch: m.Epoch,
			ToQueueID: dst.ID, Now: base, MoveTask: "second"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := get("second"); got.Moved != 2 {
		t.Fatalf("task counted %d moves, want 2", got.Moved)
	}
}

// testSharedAttemptReplay: a receive attempt recorded through one handle
// is found through the other, by queue and id, if made at or after the
// cutoff asked; recording it again replaces it.
func testSharedAttemptReplay(t *testing.T, a, b baton.SharedStore) {
	ctx := t.Context()
	q := QueueID(1)
	leases := []baton.LeaseRef{{MessageID: MessageID(1), Epoch: 1}, {MessageID: MessageID(2), Epoch: 3}}
	if err := a.AttemptPut(ctx, baton.Attempt{QueueID: q, ID: "try-1", LeasedAt: base, Leases: leases,
		Forget: at(-5 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	get := func(s baton.SharedStore, queueID uint64, id string, since time.Time) (baton.Attempt, bool) {
		t.Helper()
		got, ok, err := s.AttemptGet(ctx, queueID, id, since)
		if err != nil {
			t.Fatal(err)
		}
		return got, ok
	}
	got, ok := get(b, q, "try-1", at(-time.Minute))
	if !ok || got.QueueID != q || got.ID != "try-1" || !got.LeasedAt.Equal(base) || !slices.Equal(got.Leases, leases) {
		t.Fatalf("attempt through the other handle: %+v, %v; want try-1 at base with %v", got, ok, leases)
	}
	if _, ok := get(b, q, "try-1", base); !ok {
		t.Error("attempt made at the cutoff not found")
	}
	if got, ok := get(b, q, "try-1", at(time.Millisecond)); ok {
		t.Errorf("attempt made before the cutoff found: %+v", got)
	}
	if got, ok := get(b, QueueID(2), "try-1", at(-time.Minute)); ok {
		t.Errorf("attempt of another queue found: %+v", got)
	}
	if got, ok := get(a, q, "try-2", at(-time.Minute)); ok {
		t.Errorf("attempt of another id found: %+v", got)
	}
	again := []baton.LeaseRef{{MessageID: MessageID(1), Epoch: 2}}
	if err := b.AttemptPut(ctx, baton.Attempt{QueueID: q, ID: "try-1", LeasedAt: at(time.Minute), Leases: again,
		Forget: at(-4 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if got, ok := get(a, q, "try-1", base); !ok || !got.LeasedAt.Equal(at(time.Minute)) || !slices.Equal(got.Leases, again) {
		t.Fatalf("attempt recorded again: %+v, %v; want the second", got, ok)
	}
}

// testSharedLedgerRelay: lease-ledger batches of the largest size, any
// bytes, published through one handle reach the subscribers of both,
// the publisher's own included, unchanged and in order.
func testSharedLedgerRelay(t *testing.T, a, b baton.SharedStore) {
	var mu sync.Mutex
	got := map[string][][]byte{}
	gaps := 0 // batches delivered with a gap's word
	for name, s := range map[string]baton.SharedStore{"a": a, "b": b} {
		s.SubscribeLedger(func(batch []byte, gap baton.LedgerGap) {
			mu.Lock()
			got[name] = append(got[name], bytes.Clone(batch))
			if gap != baton.LedgerNoGap {
				gaps++
			}
			mu.Unlock()
		})
	}
	first := make([]byte, baton.MaxLedgerBatch)
	for i := range first {
		first[i] = byte(i * 7)
	}
	second := []byte{0, 1, 2, 255}
	if err := a.PublishLedger(t.Context(), [][]byte{first, second}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, deliveryWait, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, name := range []string{"a", "b"} {
			if len(got[name]) < 2 {
				return fmt.Errorf("handle %s heard %d batches, want 2", name, len(got[name]))
			}
			if !bytes.Equal(got[name][0], first) || !bytes.Equal(got[name][1], second) {
				return fmt.Errorf("handle %s heard other bytes or order: %d and %d bytes", name, len(got[name][0]), len(got[name][1]))
			}
		}
		if gaps > 0 {
			t.Fatalf("%d batches delivered with a gap's word", gaps)
		}
		return nil
	})
}

// testSharedHealth: both handles answer a ping; one closing, as its server
// dies, leaves the other answering.
func testSharedHealth(t *testing.T, a, b baton.SharedStore) {
	for name, s := range map[string]baton.SharedStore{"a": a, "b": b} {
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("ping %s: %v", name, err)
		}
	}
	b.Close()
	if err := a.Ping(t.Context()); err != nil {
		t.Errorf("ping after the other handle closed: %v", err)
	}
}

// testSharedFIFOGroupOrder: the order of FIFO groups against each other
// (the suite's fifoGroupCases) is the store's, not a handle's: calls made
// through the two handles in turn get the answers one handle gives.
func testSharedFIFOGroupOrder(t *testing.T, a, b baton.SharedStore) {
	runFIFOGroupCases(t, a, b)
}
