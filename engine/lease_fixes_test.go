package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
)

// mkQueue creates a queue of the default account.
func mkQueue(t *testing.T, e *engine.Engine, name string, attrs map[string]string) engine.QueueRef {
	t.Helper()
	ref := engine.QueueRef{Account: "000000000000", Name: name}
	if _, err := e.CreateQueue(context.Background(), engine.CreateQueueParams{Account: ref.Account, Name: name, Attributes: attrs}); err != nil {
		t.Fatal(err)
	}
	return ref
}

// A long poll wakes when a ChangeMessageVisibility shortens a lease, so the
// message comes back when the shortened lease lapses, not at the end of the
// wait (it used to wake only for a release).
func TestLongPollWakesForShortenedLease(t *testing.T) {
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "q", nil)
	if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "a"}); err != nil {
		t.Fatal(err)
	}
	got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(30)})
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	type res struct {
		n   int
		at  time.Time
		err error
	}
	done := make(chan res, 1)
	go func() {
		m, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{WaitTimeSeconds: ptr(20)})
		done <- res{len(m), clock.Now(), err}
	}()
	testutil.CheckFor(t, 5*time.Second, func() error {
		if clock.Timers() == 0 {
			return fmt.Errorf("poll not waiting")
		}
		return nil
	})
	start := clock.Now()
	if err := e.ChangeMessageVisibility(ctx, ref, got[0].ReceiptHandle, ptr(2)); err != nil {
		t.Fatal(err)
	}
	// Step the clock one second at a time up to the end of the wait.
	for i := 0; i < 20; i++ {
		clock.Advance(time.Second)
		select {
		case r := <-done:
			if r.n != 1 || r.at.Sub(start) > 3*time.Second {
				t.Fatalf("long poll returned %d msgs %v after CMV (err %v); want 1 msg ~2s after", r.n, r.at.Sub(start), r.err)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	r := <-done
	t.Fatalf("long poll returned %d msgs only %v after CMV(2s)", r.n, r.at.Sub(start))
}

// A retried delete of a message the same receipt already deleted (an SDK
// retry, say) is neither a second completion nor a late one.
func TestRepeatedDeleteIsNotLate(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t)
	ref := mkQueue(t, e, "q", nil)
	e.SendMessage(ctx, ref, engine.SendParams{Body: "a"})
	got, _ := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{})
	for i := 0; i < 2; i++ {
		if err := e.DeleteMessage(ctx, ref, got[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	r, err := e.LeaseReport(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if r.SinceStart.Late != 0 || r.SinceStart.Completed != 1 || r.Diagnosis != ledger.DiagnosisHealthy {
		t.Fatalf("after one receive and a retried delete: late=%d completed=%d diagnosis=%s (%s)",
			r.SinceStart.Late, r.SinceStart.Completed, r.Diagnosis, r.Advice)
	}
}

// A ReceiveRequestAttemptId replay does not stretch a lease past 12 h after
// its receive.
func TestReplayKeepsCeiling(t *testing.T) {
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	e.SendMessage(ctx, ref, engine.SendParams{Body: "a", GroupID: "g"})
	p := engine.ReceiveParams{VisibilityTimeout: ptr(43200), ReceiveRequestAttemptID: "try-1"}
	got, err := e.ReceiveMessage(ctx, ref, p)
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	clock.Advance(5 * time.Minute)
	again, err := e.ReceiveMessage(ctx, ref, p)
	if err != nil || len(again) != 1 || again[0].ReceiptHandle != got[0].ReceiptHandle {
		t.Fatal("replay failed", again, err)
	}
	clock.Advance(12*time.Hour - 5*time.Minute + time.Second) // 12h+1s after the receive
	late, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(late) == 0 {
		t.Fatalf("12h+1s after its receive the message is still in flight: the replay extended the lease past the 43200 s ceiling")
	}
}

// A replay that finds one of its messages no longer held under the earlier
// receive's lease falls back to a fresh receive; the leases it had already
// reset must be left as they were, not extended for a caller who will not
// get their receipts.
func TestReplayFailingMidwayKeepsLeases(t *testing.T) {
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	e.SendMessage(ctx, ref, engine.SendParams{Body: "a", GroupID: "g"})
	e.SendMessage(ctx, ref, engine.SendParams{Body: "b", GroupID: "g"})
	p := engine.ReceiveParams{MaxNumberOfMessages: ptr(10), VisibilityTimeout: ptr(30), ReceiveRequestAttemptID: "try-1"}
	got, err := e.ReceiveMessage(ctx, ref, p)
	if err != nil || len(got) != 2 || got[0].Body != "a" {
		t.Fatal(got, err)
	}
	if err := e.DeleteMessage(ctx, ref, got[1].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Second)
	if again, err := e.ReceiveMessage(ctx, ref, p); err != nil || len(again) != 0 {
		t.Fatalf("replay with a deleted message: %v, %v; want a fresh receive finding the group in flight", again, err)
	}
	clock.Advance(11 * time.Second) // 31 s after the receive
	late, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(late) != 1 || late[0].Body != "a" {
		t.Fatalf("31 s after a 30 s receive got %v: the failed replay extended a's lease", late)
	}
}

// A holder that deletes its message in time, after a purge took the
// message away, did not overrun its lease: no late completion, no
// lease-too-short diagnosis.
func TestDeleteAfterPurgeIsNotLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "q", nil)
	if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "a"}); err != nil {
		t.Fatal(err)
	}
	got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{})
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	clock.Advance(5 * time.Second)
	if err := e.PurgeQueue(ctx, ref); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second) // 10 s into a 30 s lease
	if err := e.DeleteMessage(ctx, ref, got[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	r, err := e.LeaseReport(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.SinceStart; s.Late != 0 || s.Expired != 0 || r.Diagnosis != ledger.DiagnosisHealthy {
		t.Errorf("delete 10 s into a 30 s lease after a purge: late=%d expired=%d diagnosis=%s (%s); want 0, 0, %s",
			s.Late, s.Expired, r.Diagnosis, r.Advice, ledger.DiagnosisHealthy)
	}
	late, err := e.RecentLateCompletions(ctx, ref)
	if err != nil || len(late) != 0 {
		t.Errorf("late completions = %+v, %v; want none", late, err)
	}
}

// A ReceiveRequestAttemptId replay resets the leases it returns again, and
// the ledger learns the new deadline: the lease does not seem to lapse at
// its first deadline while the store still holds it.
func TestReplayMovesLedgerDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "a", GroupID: "g"}); err != nil {
		t.Fatal(err)
	}
	p := engine.ReceiveParams{ReceiveRequestAttemptID: "try-1"} // 30 s leases
	got, err := e.ReceiveMessage(ctx, ref, p)
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	clock.Advance(20 * time.Second)
	if again, err := e.ReceiveMessage(ctx, ref, p); err != nil || len(again) != 1 { // lease now ends at t=50
		t.Fatal(again, err)
	}
	clock.Advance(20 * time.Second) // t=40: past the first deadline
	leases, err := e.ActiveLeases(ctx, ref, 10)
	if err != nil || len(leases) != 1 || !leases[0].Deadline.Equal(testutil.Epoch.Add(50*time.Second)) {
		t.Errorf("active leases at t=40 = %+v, %v; want one ending at t=50", leases, err)
	}
	qs, err := e.QueueMetrics(ctx)
	if err != nil || len(qs) != 1 || qs[0].Totals.Expired != 0 {
		t.Errorf("metrics at t=40: %+v, %v; want no expiry", qs, err)
	}
	if err := e.DeleteMessage(ctx, ref, got[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	r, err := e.LeaseReport(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.SinceStart; s.Expired != 0 || s.Late != 0 || s.Completed != 1 || r.Diagnosis != ledger.DiagnosisHealthy {
		t.Errorf("after a replay and a delete in time: %s, %+v", r.Diagnosis, s)
	}
}

// A holder whose lease lapsed while another receiver took the message is
// one duplicate execution, however many requests it then makes with its
// receipt: a late heartbeat, the late delete, the SDK's retry of that
// delete. The retry is no second late completion.
func TestLateHolderIsOneDuplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "q", nil)
	if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "a"}); err != nil {
		t.Fatal(err)
	}
	a, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{}) // 30 s lease
	if err != nil || len(a) != 1 {
		t.Fatal(a, err)
	}
	clock.Advance(31 * time.Second)
	if b, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{}); err != nil || len(b) != 1 {
		t.Fatal(b, err)
	}
	clock.Advance(5 * time.Second) // t=36
	if err := e.ChangeMessageVisibility(ctx, ref, a[0].ReceiptHandle, ptr(30)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(4 * time.Second) // t=40
	// The delete, then the SDK's retry of it.
	for range 2 {
		if err := e.DeleteMessage(ctx, ref, a[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	r, err := e.LeaseReport(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.SinceStart; s.Late != 2 || s.Duplicates != 1 || s.Completed != 1 {
		t.Errorf("late %d, duplicates %d, completed %d; want 2 (the heartbeat and the delete), 1, 1", s.Late, s.Duplicates, s.Completed)
	}
	late, err := e.RecentLateCompletions(ctx, ref)
	if err != nil || len(late) != 2 || late[0].Kind != ledger.EventLateDelete || late[0].Late != 10*time.Second {
		t.Errorf("late completions = %+v, %v; want the heartbeat and the delete 10 s late", late, err)
	}
}

// Issue 31 item 7: holders whose only late requests are heartbeats (they
// crashed before their delete, or hang behind a heartbeat slower than the
// lease) overran their leases, but no lease completed: there is no p99.
// The doctor says what is known (a holder worked at least 40 s) and gives
// no figure, least of all one that grows with the hang: after 8 hours of
// late heartbeats it would have recommended 12 hours.
func TestLateHeartbeatGivesNoGrowingTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := mkQueue(t, e, "q", nil)
	for range ledger.MinFindingLeases {
		if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(10)}) // 30 s leases
	if err != nil || len(got) != ledger.MinFindingLeases {
		t.Fatal(got, err)
	}
	heartbeat := func() {
		for _, m := range got {
			if err := e.ChangeMessageVisibility(ctx, ref, m.ReceiptHandle, ptr(30)); err != nil {
				t.Fatal(err)
			}
		}
	}
	clock.Advance(40 * time.Second)
	heartbeat()
	r, err := e.LeaseReport(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if r.Diagnosis != ledger.DiagnosisLeaseTooShort || r.RecommendedVisibilityTimeout != 30 ||
		!strings.Contains(r.Advice, "no lease completed, so there is no p99: a holder was still working at least 40.0s after its receive") {
		t.Errorf("diagnosis %s, recommended %d s; want %s, no figure but the timeout in force (30 s), and what is known: %s",
			r.Diagnosis, r.RecommendedVisibilityTimeout, ledger.DiagnosisLeaseTooShort, r.Advice)
	}
	clock.Advance(8 * time.Hour) // the hang goes on, and so do the late heartbeats
	heartbeat()
	if r, err = e.LeaseReport(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if r.RecommendedVisibilityTimeout != 30 || strings.Contains(r.Advice, "43200") {
		t.Errorf("after 8 h of hang: recommended %d s, advice %s; want no figure that grows with the hang", r.RecommendedVisibilityTimeout, r.Advice)
	}
}
