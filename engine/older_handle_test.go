package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
)

// On a standard queue a visibility change with the handle of an earlier
// receive moves the lease of the message's current receive. The ledger
// records it as a late change through the older lease, a duplicate, and
// moves the current lease's deadline without counting a renewal or
// judging that lease expired at its first end.
func TestOlderHandleMovesCurrentLease(t *testing.T) {
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "q", nil)
	if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "a"}); err != nil {
		t.Fatal(err)
	}
	first, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(10)})
	if err != nil || len(first) != 1 {
		t.Fatal(first, err)
	}
	clock.Advance(11 * time.Second)
	second, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(10)}) // until t=21
	if err != nil || len(second) != 1 {
		t.Fatal(second, err)
	}
	clock.Advance(4 * time.Second) // t=15
	if err := e.ChangeMessageVisibility(ctx, ref, first[0].ReceiptHandle, ptr(300)); err != nil {
		t.Fatalf("extend with the first handle: %v", err)
	}
	clock.Advance(7 * time.Second) // t=22: past the second lease's first end
	if got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{}); err != nil || len(got) != 0 {
		t.Fatalf("receive at t=22 got %d messages (%v); the extension was lost", len(got), err)
	}

	r, err := e.LeaseReport(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	s := r.SinceStart
	if s.Late != 1 || s.Duplicates != 1 || s.Renewals != 0 || s.Expired != 1 {
		t.Errorf("late=%d duplicates=%d renewals=%d expired=%d, want 1, 1, 0 and 1 (the first lease only)",
			s.Late, s.Duplicates, s.Renewals, s.Expired)
	}
	leases, err := e.ActiveLeases(ctx, ref, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := testutil.Epoch.Add(315 * time.Second)
	if len(leases) != 1 || leases[0].Epoch != 2 || !leases[0].Deadline.Equal(want) || leases[0].Renewals != 0 {
		t.Errorf("active leases %+v, want epoch 2 until %v, no renewal", leases, want)
	}
	hist, ok, err := e.MessageHistory(ctx, ref, second[0].MessageID)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	var kinds []string
	for _, ev := range hist {
		kinds = append(kinds, ev.Kind)
		if ev.Kind == ledger.EventLateChange && (ev.Epoch != 1 || !ev.Duplicate || !ev.Deadline.Equal(want)) {
			t.Errorf("late change %+v, want epoch 1, a duplicate, moving the current lease to %v", ev, want)
		}
		if ev.Kind == ledger.EventRenew {
			t.Errorf("history has a renewal %+v: the change was not its holder's", ev)
		}
	}
	if len(kinds) != 4 || kinds[3] != ledger.EventLateChange {
		t.Errorf("history %v, want receive, expire, receive, late-change", kinds)
	}
}

// An older handle releasing the message makes it visible at once, and the
// current lease ends there, not at its deadline.
func TestOlderHandleReleasesCurrentLease(t *testing.T) {
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "q", nil)
	e.SendMessage(ctx, ref, engine.SendParams{Body: "a"})
	first, _ := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(10)})
	clock.Advance(11 * time.Second)
	if got, _ := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(30)}); len(got) != 1 {
		t.Fatal("second receive got nothing")
	}
	if err := e.ChangeMessageVisibility(ctx, ref, first[0].ReceiptHandle, ptr(0)); err != nil {
		t.Fatalf("release with the first handle: %v", err)
	}
	if leases, _ := e.ActiveLeases(ctx, ref, 10); len(leases) != 0 {
		t.Errorf("active leases after the release: %+v", leases)
	}
	got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{})
	if err != nil || len(got) != 1 {
		t.Fatalf("receive after the release: %d messages (%v), want 1", len(got), err)
	}
}

// On a FIFO queue only the current receive's handle changes the lease: a
// superseded one succeeds and changes nothing.
func TestOlderHandleFIFOChangesNothing(t *testing.T) {
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	e.SendMessage(ctx, ref, engine.SendParams{Body: "a", GroupID: "g"})
	first, _ := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(10)})
	clock.Advance(11 * time.Second)
	if got, _ := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(10)}); len(got) != 1 {
		t.Fatal("second receive got nothing")
	}
	if err := e.ChangeMessageVisibility(ctx, ref, first[0].ReceiptHandle, ptr(300)); err != nil {
		t.Fatalf("change with the first handle: %v", err)
	}
	clock.Advance(10 * time.Second) // t=21: the second lease's end
	got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{})
	if err != nil || len(got) != 1 {
		t.Fatalf("receive when the second lease ends: %d messages (%v), want 1", len(got), err)
	}
}
