package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

func TestQueueCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := engine.QueueRef{Account: "000000000000", Name: "counted"}
	if _, err := e.CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		t.Fatal(err)
	}
	if c, err := e.QueueCounts(ctx, ref); err != nil || c != (engine.QueueCounts{}) {
		t.Fatalf("empty queue: %+v, %v", c, err)
	}
	for _, delay := range []int{0, 0, 60} {
		if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "x", DelaySeconds: ptr(delay)}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(5 * time.Second)
	}
	if _, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	want := engine.QueueCounts{Visible: 1, InFlight: 1, Delayed: 1, OldestAge: 15 * time.Second}
	if c, err := e.QueueCounts(ctx, ref); err != nil || c != want {
		t.Errorf("counts = %+v, %v; want %+v", c, err, want)
	}
	if _, err := e.QueueCounts(ctx, engine.QueueRef{Account: ref.Account, Name: "nope"}); !baton.IsCode(err, baton.ErrQueueDoesNotExist) {
		t.Errorf("missing queue: %v", err)
	}
	select {
	case <-e.Closing():
		t.Fatal("Closing is closed before Close")
	default:
	}
	e.Close()
	select {
	case <-e.Closing():
	default:
		t.Fatal("Closing is open after Close")
	}
}
