package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
)

// FIFO queues never fail a receive for the in-flight limit (docs/sqs-behaviour.md §5);
// a standard queue's short poll does (OverLimit). The limit is lowered to 30
// here: leasing 120,000 messages takes minutes.
func TestInFlightLimitFIFOReturnsNothing(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t)
	engine.SetInFlightLimit(e, 30)
	ref := mkQueue(t, e, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	const n = 30
	for i := 0; i < n; i += 10 {
		var b []engine.SendParams
		for j := i; j < i+10; j++ {
			b = append(b, engine.SendParams{ID: fmt.Sprint("e", j-i), Body: fmt.Sprint("m", j), GroupID: fmt.Sprint("g", j)})
		}
		if _, f, err := e.SendMessageBatch(ctx, ref, b); err != nil || len(f) > 0 {
			t.Fatal(err, f)
		}
	}
	total := 0
	for i := 0; i < n/10+10 && total < n; i++ {
		got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), VisibilityTimeout: ptr(600)})
		if err != nil {
			t.Fatalf("after %d in flight: %v", total, err)
		}
		total += len(got)
	}
	e.SendMessage(ctx, ref, engine.SendParams{Body: "one more", GroupID: "other"})
	if got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{}); err != nil || len(got) != 0 {
		t.Fatalf("FIFO short poll with %d in flight: %d messages, %v; want none and no error", total, len(got), err)
	}

	std := mkQueue(t, e, "std", nil)
	for range n + 1 {
		if _, err := e.SendMessage(ctx, std, engine.SendParams{Body: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		if _, err := e.ReceiveMessage(ctx, std, engine.ReceiveParams{VisibilityTimeout: ptr(600)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.ReceiveMessage(ctx, std, engine.ReceiveParams{})
	var be *baton.Error
	if !errors.As(err, &be) || be.Code != baton.ErrOverLimit {
		t.Fatalf("standard short poll with %d in flight: %v, want OverLimit", n, err)
	}
}

// A move task that fails on one message gives back the other messages of
// its batch: they are not hidden in the dead-letter queue for the move's
// lease.
func TestMoveTaskFailureReleasesBatch(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t)
	dlq := mkQueue(t, e, "dlq", nil)
	arn := e.ARN(dlq.Account, dlq.Name)
	src := mkQueue(t, e, "src", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":1}`})
	e.SendMessage(ctx, dlq, engine.SendParams{Body: "orphan"}) // sent straight to the DLQ
	e.SendMessage(ctx, src, engine.SendParams{Body: "x"})
	if got, _ := e.ReceiveMessage(ctx, src, engine.ReceiveParams{VisibilityTimeout: ptr(0)}); len(got) != 1 {
		t.Fatal("first receive")
	}
	if got, _ := e.ReceiveMessage(ctx, src, engine.ReceiveParams{}); len(got) != 0 {
		t.Fatal("second receive should dead-letter")
	}
	if _, err := e.StartMessageMoveTask(ctx, engine.StartMessageMoveTaskParams{Account: dlq.Account, SourceARN: arn}); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 5*time.Second, func() error {
		ts, _ := e.ListMessageMoveTasks(ctx, "", dlq.Account, arn, nil)
		if len(ts) == 0 || ts[0].Status == engine.TaskRunning {
			return fmt.Errorf("task still running")
		}
		return nil
	})
	ts, _ := e.ListMessageMoveTasks(ctx, "", dlq.Account, arn, nil)
	if ts[0].Status != engine.TaskFailed {
		t.Errorf("task %s (%s), want FAILED: one message has no source to go back to", ts[0].Status, ts[0].FailureReason)
	}
	got, err := e.ReceiveMessage(ctx, dlq, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), AttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("after the failed task the DLQ shows %d of its 2 messages", len(got))
	}
}
