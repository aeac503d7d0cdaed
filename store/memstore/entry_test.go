package memstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/store/memstore"
)

// TestCompactFields checks what the index keeps in compact form comes back
// as it was sent: senders past the per-queue table, ids that are not UUIDs,
// the Unix epoch as a time, and the fields kept out of line.
func TestCompactFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	q := &baton.Queue{ID: 1, Account: "000000000000", Name: "compact"}
	if err := s.QueueCreate(ctx, baton.QueueCreateParams{Queue: q}); err != nil {
		t.Fatal(err)
	}
	epoch := time.Unix(0, 0).UTC()
	want := map[string]*baton.Message{}
	var msgs []*baton.Message
	for i := range 300 {
		id := ids.NewUUID()
		if i%3 == 0 {
			id = "id-" + strconv.Itoa(i)
		}
		m := &baton.Message{ID: id, SenderID: "sender-" + strconv.Itoa(i), SentAt: epoch, VisibleAt: epoch}
		if i%2 == 0 {
			m.Body, m.TraceHeader, m.DeadLetterSourceARN = "body", "trace", "arn"
			m.Attributes = map[string]baton.MessageAttribute{"a": {DataType: "Binary", BinaryValue: []byte{1}}}
		}
		want[id] = m
		msgs = append(msgs, m)
	}
	if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: 1, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	now := epoch.Add(time.Second)
	got, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: 1, Now: now, Max: 1000, VisibleAt: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(msgs) {
		t.Fatalf("received %d, want %d", len(got), len(msgs))
	}
	for _, g := range got {
		w := want[g.ID]
		if w == nil {
			t.Fatalf("received unknown id %q", g.ID)
		}
		if g.SenderID != w.SenderID || g.Body != w.Body || g.TraceHeader != w.TraceHeader || g.DeadLetterSourceARN != w.DeadLetterSourceARN {
			t.Errorf("%s: got sender %q body %q trace %q dlq %q, want %q %q %q %q", g.ID,
				g.SenderID, g.Body, g.TraceHeader, g.DeadLetterSourceARN, w.SenderID, w.Body, w.TraceHeader, w.DeadLetterSourceARN)
		}
		if len(g.Attributes) != len(w.Attributes) {
			t.Errorf("%s: %d attributes, want %d", g.ID, len(g.Attributes), len(w.Attributes))
		}
		if !g.SentAt.Equal(epoch) || !g.FirstReceivedAt.Equal(now) || !g.LeasedAt.Equal(now) || g.ReceiveCount != 1 || !g.Leased {
			t.Errorf("%s: sent %v first received %v leased %v count %d leased %v", g.ID, g.SentAt, g.FirstReceivedAt, g.LeasedAt, g.ReceiveCount, g.Leased)
		}
		out, err := s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: 1, MessageID: g.ID, Epoch: g.Epoch, Now: now})
		if err != nil || out.Result != baton.LeaseCurrent || out.Message.SenderID != w.SenderID {
			t.Errorf("delete %s: %+v, %v", g.ID, out, err)
		}
	}
}
