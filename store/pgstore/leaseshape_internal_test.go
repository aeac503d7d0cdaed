package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// TestLeaseOutcomesShape: a batch delete or visibility change answers each
// message's lease state without its payload, which baton.Store allows and
// which spares the database sending every body back; a single delete or
// change answers the whole message (a receive attempt's replay hands it to
// the client), in a round of its own or in one with a batch.
func TestLeaseOutcomesShape(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	qid := mustQueue(t, s, "lease-shape", false)
	now := time.Now()
	sent := sendN(t, s, qid, "m", 6, now)
	epochs := receiveAll(t, s, qid, now)
	later := now.Add(time.Minute)
	whole := func(what string, out baton.LeaseOutcome, want *baton.Message) {
		t.Helper()
		if out.Result != baton.LeaseCurrent || out.Message == nil {
			t.Fatalf("%s: %+v, want the current lease's message", what, out)
		}
		if out.Message.ID != want.ID || out.Message.Body != want.Body || out.Message.BodyMD5 != want.BodyMD5 {
			t.Errorf("%s: message %q body %q md5 %q, want %q %q %q", what, out.Message.ID, out.Message.Body, out.Message.BodyMD5,
				want.ID, want.Body, want.BodyMD5)
		}
	}
	lean := func(what string, out baton.LeaseOutcome, want *baton.Message) {
		t.Helper()
		if out.Result != baton.LeaseCurrent || out.Message == nil {
			t.Fatalf("%s: %+v, want the current lease's message", what, out)
		}
		m := out.Message
		if m.ID != want.ID || m.Epoch != epochs[want.ID] || !m.Leased || m.ReceiveCount != 1 || !m.VisibleAt.After(now) {
			t.Errorf("%s: message %q epoch %d leased %v count %d visible at %v; want %q's lease state (epoch %d)",
				what, m.ID, m.Epoch, m.Leased, m.ReceiveCount, m.VisibleAt, want.ID, epochs[want.ID])
		}
		if m.Body != "" || m.BodyMD5 != "" {
			t.Errorf("%s: body %q md5 %q: the payload came back", what, m.Body, m.BodyMD5)
		}
	}

	outs, err := s.MessageChangeVisibilityBatch(ctx, baton.MessageChangeVisibilityBatchParams{QueueID: qid, Now: now,
		Entries: []baton.VisibilityChange{{MessageID: sent[0].ID, Epoch: epochs[sent[0].ID], VisibleAt: later}}})
	if err != nil {
		t.Fatal(err)
	}
	lean("batch change", outs[0], sent[0])
	out, err := s.MessageChangeVisibility(ctx, baton.MessageChangeVisibilityParams{QueueID: qid, Now: now,
		MessageID: sent[1].ID, Epoch: epochs[sent[1].ID], VisibleAt: later})
	if err != nil {
		t.Fatal(err)
	}
	whole("single change", out, sent[1])

	// A single change and a batch change in one round.
	var single baton.LeaseOutcome
	var singleErr, batchErr error
	rounds := inOneRound(t, s,
		func() {
			single, singleErr = s.MessageChangeVisibility(ctx, baton.MessageChangeVisibilityParams{QueueID: qid, Now: now,
				MessageID: sent[2].ID, Epoch: epochs[sent[2].ID], VisibleAt: later})
		},
		func() {
			_, batchErr = s.MessageChangeVisibilityBatch(ctx, baton.MessageChangeVisibilityBatchParams{QueueID: qid, Now: now,
				Entries: []baton.VisibilityChange{{MessageID: sent[3].ID, Epoch: epochs[sent[3].ID], VisibleAt: later}}})
		})
	if singleErr != nil || batchErr != nil {
		t.Fatal(singleErr, batchErr)
	}
	if rounds != 1 {
		t.Errorf("%d rounds, want the two changes in one", rounds)
	}
	whole("single change in a round with a batch", single, sent[2])

	outs, err = s.MessageDeleteBatch(ctx, baton.MessageDeleteBatchParams{QueueID: qid, Now: now,
		Entries: []baton.LeaseRef{{MessageID: sent[4].ID, Epoch: epochs[sent[4].ID]}}})
	if err != nil {
		t.Fatal(err)
	}
	lean("batch delete", outs[0], sent[4])
	out, err = s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: qid, Now: now, MessageID: sent[5].ID, Epoch: epochs[sent[5].ID]})
	if err != nil {
		t.Fatal(err)
	}
	whole("single delete", out, sent[5])
}
