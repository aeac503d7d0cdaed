package baton

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// window is the engine's: how long a ReceiveRequestAttemptId is honoured.
const window = 5 * time.Minute

// BenchmarkAttemptPutMany records 50,000 FIFO receive attempts within one
// window, as receivers that give every receive its own
// ReceiveRequestAttemptId do: each put must not pass over all the others,
// or n attempts cost n².
func BenchmarkAttemptPutMany(b *testing.B) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for b.Loop() {
		var a AttemptLog
		for i := range 50000 {
			now := t0.Add(time.Duration(i) * time.Millisecond)
			if err := a.AttemptPut(ctx, Attempt{QueueID: 1, ID: strconv.Itoa(i), LeasedAt: now, Forget: now.Add(-window)}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// An AttemptLog forgets, oldest first, those leased before a put's
// Forget or a get's since, keep an attempt put again meanwhile, and hold
// no more than the window's.
func TestAttemptsForgetInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var a AttemptLog
	put := func(id string, at time.Time) {
		t.Helper()
		if err := a.AttemptPut(ctx, Attempt{QueueID: 1, ID: id, LeasedAt: at, Forget: at.Add(-window)}); err != nil {
			t.Fatal(err)
		}
	}
	put("a", t0)
	put("b", t0.Add(time.Minute))
	put("a", t0.Add(2*time.Minute)) // a again: its first put must not forget it
	for i := range 1000 {
		put("x"+strconv.Itoa(i), t0.Add(3*time.Minute))
	}
	put("c", t0.Add(6*time.Minute+30*time.Second)) // forgets b (and a's first put)
	if _, ok, _ := a.AttemptGet(ctx, 1, "b", t0.Add(90*time.Second)); ok {
		t.Error("b kept past its window")
	}
	if _, ok, _ := a.AttemptGet(ctx, 1, "a", t0.Add(90*time.Second)); !ok {
		t.Error("a, put again, forgotten with its first put")
	}
	if n := len(a.byID); n != 1002 {
		t.Errorf("%d attempts kept, want 1002 (a, c and the 1,000 x)", n)
	}
	// A get forgets as a put does, so what is kept does not wait for puts.
	if _, ok, _ := a.AttemptGet(ctx, 1, "c", t0.Add(4*time.Minute)); !ok {
		t.Error("c forgotten within its window")
	}
	if n, m := len(a.byID), len(a.order); n != 1 || m != 1 {
		t.Errorf("after the window, %d attempts and %d puts kept, want 1 and 1", n, m)
	}
}
