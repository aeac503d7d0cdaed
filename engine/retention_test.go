package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

func newEngine(t *testing.T) (*engine.Engine, *baton.FakeClock) {
	t.Helper()
	clock := baton.NewFakeClock(testutil.Epoch)
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
