package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
)

// TestReplayConcurrentlyOnTwoNodes: retries of one FIFO receive attempt
// arriving at two nodes at once all get the first receive's messages.
func TestReplayConcurrentlyOnTwoNodes(t *testing.T) {
	t.Parallel()
	nodes, clock := startCluster(t, pgtest.MustStart(t), 2)
	ctx := context.Background()
	ref := engine.QueueRef{Account: clusterQueue.Account, Name: "r.fifo"}
	if _, err := nodes[0].CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name,
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, err := nodes[0].SendMessage(ctx, ref, engine.SendParams{Body: fmt.Sprint(i), GroupID: fmt.Sprint("g", i%3)}); err != nil {
			t.Fatal(err)
		}
	}
	p := engine.ReceiveParams{MaxNumberOfMessages: ptr(4), ReceiveRequestAttemptID: "x"}
	first, err := nodes[0].ReceiveMessage(ctx, ref, p)
	if err != nil || len(first) != 4 {
		t.Fatalf("first: %d, %v", len(first), err)
	}
	clock.Advance(10 * time.Second)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			got, err := nodes[i%2].ReceiveMessage(ctx, ref, p)
			if err != nil || len(got) != 4 {
				t.Errorf("replay %d: %d, %v; want 4", i, len(got), err)
				return
			}
			for j := range got {
				if got[j].ReceiptHandle != first[j].ReceiptHandle {
					t.Errorf("replay %d: message %d differs", i, j)
				}
			}
		})
	}
	wg.Wait()
	// After the window the attempt is forgotten; a new put prunes it.
	clock.Advance(6 * time.Minute)
	got, err := nodes[1].ReceiveMessage(ctx, ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), ReceiveRequestAttemptID: "x"})
	if err != nil || len(got) != 6 {
		t.Fatalf("after the window: %d, %v; want all 6 afresh", len(got), err)
	}
	if got[0].ReceiptHandle == first[0].ReceiptHandle {
		t.Error("a forgotten attempt replayed")
	}
	// Purge, then the attempt's messages are gone: a retry receives afresh.
	if err := nodes[0].PurgeQueue(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[0].SendMessage(ctx, ref, engine.SendParams{Body: "new", GroupID: "g0"}); err != nil {
		t.Fatal(err)
	}
	got, err = nodes[1].ReceiveMessage(ctx, ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), ReceiveRequestAttemptID: "x"})
	if err != nil || len(got) != 1 || got[0].Body != "new" {
		t.Fatalf("after purge: %d, %v; want the new message", len(got), err)
	}
}
