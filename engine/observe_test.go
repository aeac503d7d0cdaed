package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
)

func TestObserveLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	ref := engine.QueueRef{Account: "000000000000", Name: "seen"}
	if _, err := e.CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	ctx1 := ledger.WithClient(ctx, ledger.Client{Addr: "10.0.0.1", UserAgent: "worker/1"})
	msgs, err := e.ReceiveMessage(ctx1, ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(2)})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("receive: %v, %d", err, len(msgs))
	}
	leases, err := e.ActiveLeases(ctx, ref, 10)
	if err != nil || len(leases) != 2 || leases[0].Client.UserAgent != "worker/1" || !leases[0].Deadline.Equal(testutil.Epoch.Add(30*time.Second)) {
		t.Fatalf("active leases = %+v, %v", leases, err)
	}
	clock.Advance(40 * time.Second)
	if err := e.DeleteMessage(ctx1, ref, msgs[0].ReceiptHandle); err != nil { // 10 s late
		t.Fatal(err)
	}
	if err := e.DeleteMessage(ctx1, ref, msgs[1].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	if leases, _ := e.ActiveLeases(ctx, ref, 10); len(leases) != 0 {
		t.Errorf("leases after lapse = %+v, want none", leases)
	}
	late, err := e.RecentLateCompletions(ctx, ref)
	if err != nil || len(late) != 2 || late[0].MessageID != msgs[1].MessageID || late[1].Late != 10*time.Second {
		t.Errorf("late completions = %+v, %v", late, err)
	}
	act, err := e.QueueActivity(ctx, ref)
	if err != nil || len(act) != 15 {
		t.Fatalf("activity: %v, %d minutes", err, len(act))
	}
	var sent, deleted, expired uint64
	for _, m := range act {
		sent, deleted, expired = sent+m.Sent, deleted+m.Deleted, expired+m.Expired
	}
	if sent != 2 || deleted != 2 || expired != 2 {
		t.Errorf("activity sent %d deleted %d expired %d, want 2 2 2", sent, deleted, expired)
	}
	h, err := e.LeaseHistogram(ctx, ref, []time.Duration{time.Second, time.Minute})
	if err != nil || len(h) != 3 || h[1].Count != 2 {
		t.Errorf("histogram = %+v, %v; want both leases (40 s) in the second bucket", h, err)
	}
}

func ptr[T any](v T) *T { return &v }
