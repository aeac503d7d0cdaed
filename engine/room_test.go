package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// statsCounter is a store that counts its MessageStats calls.
type statsCounter struct {
	baton.Store
	calls atomic.Int32
}

func (s *statsCounter) MessageStats(ctx context.Context, p baton.MessageStatsParams) (baton.MessageStats, error) {
	s.calls.Add(1)
	return s.Store.MessageStats(ctx, p)
}

// A receive counts the queue's in-flight messages only when a recent count
// plus the node's leases since could be half the in-flight limit or more,
// and the limit holds as exactly as when every receive counted.
func TestReceiveSkipsInFlightCountWithRoom(t *testing.T) {
	ctx := context.Background()
	st := &statsCounter{Store: memstore.New()}
	e, err := engine.New(engine.Config{Store: st, Clock: clock.NewFake(testutil.Epoch)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	engine.SetInFlightLimit(e, 4)
	ref := mkQueue(t, e, "q", nil)
	for range 6 {
		if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	// Counts before the 1st (0 in flight), not before the 2nd (1 < 4/2),
	// then before each receive: 2, 3 and 4 in flight.
	for i := range 4 {
		if got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(600)}); err != nil || len(got) != 1 {
			t.Fatalf("receive %d: %d messages, %v", i+1, len(got), err)
		}
	}
	_, err = e.ReceiveMessage(ctx, ref, engine.ReceiveParams{})
	var be *baton.Error
	if !errors.As(err, &be) || be.Code != baton.ErrOverLimit {
		t.Fatalf("short poll with 4 in flight: %v, want OverLimit", err)
	}
	if n := st.calls.Load(); n != 4 {
		t.Fatalf("%d in-flight counts for 5 receives, want 4", n)
	}
}

// Receives that arrive while another receive counts the queue's in-flight
// messages wait for that count and go by it, rather than each counting: a
// node's concurrent receives made one count each whenever the last went
// stale.
func TestConcurrentReceivesShareOneInFlightCount(t *testing.T) {
	ctx := context.Background()
	st := &gatedStats{Store: memstore.New(), release: make(chan struct{})}
	st.gated.Store(true)
	e, err := engine.New(engine.Config{Store: st, Clock: clock.NewFake(testutil.Epoch)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ref := mkQueue(t, e, "q", nil)
	const receives = 8
	for range receives {
		if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, receives)
	receive := func() {
		got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{VisibilityTimeout: ptr(600)})
		if err == nil && len(got) != 1 {
			err = fmt.Errorf("%d messages, want 1", len(got))
		}
		errs <- err
	}
	st.checkShared(t, receives, receive, func(q uint64) int { return engine.RoomCountWaiters(e, q) }, "in-flight count")
	for range receives {
		if err := <-errs; err != nil {
			t.Fatalf("receive: %v", err)
		}
	}
	if n := st.calls.Load(); n != 1 {
		t.Fatalf("%d in-flight counts for %d concurrent receives, want 1", n, receives)
	}
}
