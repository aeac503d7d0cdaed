package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
)

// A FIFO receive retried with its ReceiveRequestAttemptId through another
// server of the cluster (a load balancer does not keep a client on one
// node) replays the first receive: the same messages and receipt handles,
// leases reset, instead of nothing while the group stays locked by leases
// the client never got.
func TestReplayAcrossNodes(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	testReplayAcrossNodes(t, func(t *testing.T, n int) ([]*engine.Engine, *clock.Fake) { return startCluster(t, pg, n) })
}

// TestReplayAcrossNodesInMemory replays across handles of a
// memstore.Cluster.
func TestReplayAcrossNodesInMemory(t *testing.T) {
	t.Parallel()
	testReplayAcrossNodes(t, startMemCluster)
}

func testReplayAcrossNodes(t *testing.T, start startFunc) {
	nodes, clock := start(t, 2)
	ctx := context.Background()
	ref := engine.QueueRef{Account: clusterQueue.Account, Name: "orders.fifo"}
	if _, err := nodes[0].CreateQueue(ctx, engine.CreateQueueParams{
		Account: ref.Account, Name: ref.Name,
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "30"},
	}); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"a", "b"} {
		if _, err := nodes[0].SendMessage(ctx, ref, engine.SendParams{Body: body, GroupID: "g"}); err != nil {
			t.Fatal(err)
		}
	}
	p := engine.ReceiveParams{MaxNumberOfMessages: ptr(10), ReceiveRequestAttemptID: "try-1"}
	first, err := nodes[0].ReceiveMessage(ctx, ref, p)
	if err != nil || len(first) != 2 {
		t.Fatalf("receive on node 0: %d messages, %v; want 2", len(first), err)
	}
	clock.Advance(20 * time.Second)
	again, err := nodes[1].ReceiveMessage(ctx, ref, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 2 || again[0].ReceiptHandle != first[0].ReceiptHandle || again[1].ReceiptHandle != first[1].ReceiptHandle {
		t.Fatalf("the retry through node 1 got %d messages; want node 0's two, same receipt handles", len(again))
	}
	if again[0].Body != "a" || again[1].Body != "b" {
		t.Fatalf("replayed bodies %q, %q; want a, b", again[0].Body, again[1].Body)
	}
	// The replay reset the leases to 30 s from t=20: at t=45 the group is
	// still held, and a delete by the replayed handle works.
	clock.Advance(25 * time.Second)
	if got, err := nodes[0].ReceiveMessage(ctx, ref, engine.ReceiveParams{}); err != nil || len(got) != 0 {
		t.Fatalf("t=45: got %d messages, %v; want none, the replay's leases run to t=50", len(got), err)
	}
	if err := nodes[0].DeleteMessage(ctx, ref, again[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
}
