package engine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

func newEngine(t *testing.T) (*engine.Engine, *clock.Fake) {
	t.Helper()
	clock := clock.NewFake(testutil.Epoch)
	e, err := engine.New(engine.Config{Store: memstore.New(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, clock
}

func visibleCount(t *testing.T, e *engine.Engine, ref engine.QueueRef) string {
	t.Helper()
	attrs, err := e.GetQueueAttributes(context.Background(), ref, []string{"ApproximateNumberOfMessages"})
	if err != nil {
		t.Fatal(err)
	}
	return attrs["ApproximateNumberOfMessages"]
}

func TestRetentionSweeper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := engine.QueueRef{Account: "000000000000", Name: "short"}
	if _, err := e.CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name,
		Attributes: map[string]string{"MessageRetentionPeriod": "60"}}); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"old", "old too"} {
		if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(30 * time.Second)
	if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "young"}); err != nil {
		t.Fatal(err)
	}

	s := engine.NewRetentionSweeper(e, 10*time.Second)
	s.Start(ctx)
	defer s.Stop()
	clock.Advance(31 * time.Second) // the first two are now 61 s old
	testutil.CheckFor(t, 5*time.Second, func() error {
		if clock.Timers() == 0 {
			return errString("sweeper has no timer")
		}
		return nil
	})
	// Fire the sweeper's timer, then wait for its sweep to show.
	clock.Advance(10 * time.Second)
	testutil.CheckFor(t, 5*time.Second, func() error {
		if got := visibleCount(t, e, ref); got != "1" {
			return errString("visible " + got + ", want 1")
		}
		return nil
	})
	n, err := s.SweepOnce(ctx)
	if err != nil || n != 0 {
		t.Errorf("second sweep = %d, %v; want 0, nil", n, err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// A message whose retention period ends while it is leased is gone: the
// ledger ends its lease then, so the lease neither stays active nor later
// counts as lapsed, and its holder's delete is no late completion.
func TestRetentionEndsLeaseInLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := engine.QueueRef{Account: "000000000000", Name: "short-leased"}
	if _, err := e.CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name,
		Attributes: map[string]string{"MessageRetentionPeriod": "60"}}); err != nil {
		t.Fatal(err)
	}
	sent, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "leased past its retention"})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(50 * time.Second)
	got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(120)}) // until t=170
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	clock.Advance(20 * time.Second) // t=70: 70 s old
	if n, err := engine.NewRetentionSweeper(e, time.Minute).SweepOnce(ctx); err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v; want 1, nil", n, err)
	}
	if leases, err := e.ActiveLeases(ctx, ref, 10); err != nil || len(leases) != 0 {
		t.Errorf("active leases after the sweep = %+v, %v; want none", leases, err)
	}
	clock.Advance(10 * time.Second) // t=80, within the lease
	if err := e.DeleteMessage(ctx, ref, got[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Minute) // well past the lease's deadline
	r, err := e.LeaseReport(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.SinceStart; s.Expired != 0 || s.Late != 0 || r.Diagnosis != ledger.DiagnosisHealthy {
		t.Errorf("after retention removed a leased message: expired=%d late=%d diagnosis=%s (%s); want 0, 0, %s",
			s.Expired, s.Late, r.Diagnosis, r.Advice, ledger.DiagnosisHealthy)
	}
	evs, _, err := e.MessageHistory(ctx, ref, sent.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind)
	}
	if want := []string{ledger.EventReceive, ledger.EventRemoved, ledger.EventDelete}; !slices.Equal(kinds, want) {
		t.Errorf("history = %v, want %v", kinds, want)
	}
}
