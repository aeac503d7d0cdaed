package memstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/storetest"
)

func TestRestore(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lease := 30 * time.Second

	// What an earlier store left: a FIFO queue that numbered two messages,
	// the first in flight, and a deleted queue.
	old := memstore.New()
	q := storetest.NewFIFOQueue(storetest.QueueID(1), "orders.fifo")
	storetest.MustCreateQueue(t, old, q)
	a, b := storetest.NewGroupMessage(1, "g", base), storetest.NewGroupMessage(2, "g", base)
	sent := storetest.MustSendFIFO(t, old, q.ID, base, a, b)
	leased := storetest.MustReceive(t, old, baton.MessageReceiveParams{QueueID: q.ID, Now: base, Max: 1, VisibleAt: base.Add(lease)})

	s := memstore.New()
	err := s.QueueRestore(memstore.QueueRestoreParams{
		Queue: q, LastSequenceNumber: sent[1].SequenceNumber,
		Dedup: []memstore.DedupEntry{
			{Key: a.DedupID, MessageID: a.ID, SequenceNumber: sent[0].SequenceNumber, At: base},
			{Key: b.DedupID, MessageID: b.ID, SequenceNumber: sent[1].SequenceNumber, At: base},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	first, second := *leased[0], *b
	second.SequenceNumber = sent[1].SequenceNumber
	for i, m := range []*baton.Message{&first, &second} {
		if err := s.MessageRestore(q.ID, m, uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if key, ok := s.Key(q.ID, b.ID); !ok || key != 2 {
		t.Errorf("Key of the second message restored: %d, %v; want 2, true", key, ok)
	}
	s.TombstoneRestore(storetest.Region, storetest.Account, "gone", base)

	// The lease holds, and with it the group.
	if got := storetest.MustReceive(t, s, baton.MessageReceiveParams{QueueID: q.ID, Now: base.Add(time.Second), Max: 10, VisibleAt: base.Add(time.Minute)}); len(got) != 0 {
		t.Errorf("receive during the restored lease: got %d messages, want none", len(got))
	}
	out, err := s.MessageDelete(t.Context(), baton.MessageDeleteParams{QueueID: q.ID, MessageID: a.ID, Epoch: 1, Now: base.Add(time.Second), RequireLive: true})
	if err != nil || out.Result != baton.LeaseCurrent {
		t.Errorf("delete by the restored lease: got %+v, %v; want LeaseCurrent", out, err)
	}
	// Keys deduplicate; numbering goes on.
	now := base.Add(2 * time.Second)
	dup := storetest.NewGroupMessage(3, "g", now)
	dup.DedupID = b.DedupID
	c := storetest.NewGroupMessage(4, "h", now)
	got := storetest.MustSendFIFO(t, s, q.ID, now, dup, c)
	if !got[0].Duplicate || got[0].MessageID != b.ID || got[0].SequenceNumber != sent[1].SequenceNumber {
		t.Errorf("send a restored key: got %+v, want a duplicate of %+v", got[0], sent[1])
	}
	if got[1].Duplicate || got[1].SequenceNumber <= sent[1].SequenceNumber {
		t.Errorf("send after restore: got %+v, want a sequence number above %s", got[1], sent[1].SequenceNumber)
	}
	// The tombstone refuses the name for a minute.
	err = s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: storetest.NewQueue(storetest.QueueID(2), "gone"), DeletedCutoff: base.Add(-time.Minute)})
	if !errors.Is(err, baton.ErrDeletedRecently) {
		t.Errorf("create a restored tombstone's name: got %v, want ErrDeletedRecently", err)
	}
	// Restoring twice, or into no queue, is refused.
	if err := s.QueueRestore(memstore.QueueRestoreParams{Queue: q}); !errors.Is(err, baton.ErrExists) {
		t.Errorf("restore the queue again: got %v, want ErrExists", err)
	}
	if err := s.MessageRestore(storetest.QueueID(9), &second, 3); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("restore a message into no queue: got %v, want ErrNotFound", err)
	}
	if err := s.QueueRestore(memstore.QueueRestoreParams{Queue: storetest.NewQueue(storetest.QueueID(3), "x"), LastSequenceNumber: "12"}); err == nil {
		t.Errorf("restore a sequence number memstore never gave: got nil error")
	}
}
