package engine_test

import (
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/store/memstore"
)

// TestReceiveBodyMD5 checks the body digest a receive answers: the one the
// send computed and the store kept, or, for a message the store holds
// without one (stored before the store kept digests), one computed from the
// body.
func TestReceiveBodyMD5(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := baton.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := memstore.New()
	e, err := engine.New(engine.Config{Store: s, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ref := engine.QueueRef{Account: "000000000000", Name: "orders"}
	if _, err := e.CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		t.Fatal(err)
	}
	sent, err := e.SendMessage(ctx, ref, engine.SendParams{Body: "sent through the engine"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.QueueGet(ctx, "us-east-1", ref.Account, ref.Name)
	if err != nil {
		t.Fatal(err)
	}
	old := &baton.Message{ID: "00000000-0000-4000-8000-000000000001", Body: "stored without a digest",
		SenderID: ref.Account, SentAt: clock.Now(), VisibleAt: clock.Now()}
	if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: q.ID, Messages: []*baton.Message{old}}); err != nil {
		t.Fatal(err)
	}

	ten := 10
	got, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{MaxNumberOfMessages: &ten})
	if err != nil || len(got) != 2 {
		t.Fatalf("receive: got %d messages, %v; want 2", len(got), err)
	}
	want := map[string]string{
		sent.MessageID: sent.MD5OfBody,
		old.ID:         engine.MD5OfBody(old.Body),
	}
	for _, m := range got {
		if m.MD5OfBody != want[m.MessageID] || m.MD5OfBody == "" {
			t.Errorf("message %s: got MD5OfBody %q, want %q", m.MessageID, m.MD5OfBody, want[m.MessageID])
		}
	}
	if sent.MD5OfBody != engine.MD5OfBody("sent through the engine") {
		t.Errorf("send: got MD5OfBody %q, want the body's", sent.MD5OfBody)
	}
}
