package memstore_test

import (
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/storetest"
)

// TestKeys checks the durable store's key of a message: set by SetKey,
// read back by Key, carried by a move, passed to ExpiredFunc and to a
// browse's keep, and gone with the message.
func TestKeys(t *testing.T) {
	t.Parallel()
	type drop struct {
		queueID uint64
		id      string
		key     uint64
	}
	var drops []drop
	s := memstore.NewWithOptions(memstore.Options{ExpiredFunc: func(queueID uint64, id string, key uint64) {
		drops = append(drops, drop{queueID, id, key})
	}})
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	src, dst := storetest.NewQueue(storetest.QueueID(1), "src"), storetest.NewQueue(storetest.QueueID(2), "dst")
	storetest.MustCreateQueue(t, s, src)
	storetest.MustCreateQueue(t, s, dst)
	a, b, c := storetest.NewMessage(1, base), storetest.NewMessage(2, base.Add(time.Second)), storetest.NewMessage(3, base.Add(2*time.Second))
	storetest.MustSend(t, s, src.ID, a, b, c)
	if s.SetKey(src.ID, "no-such-message", 1) || s.SetKey(storetest.QueueID(9), a.ID, 1) {
		t.Errorf("SetKey of no message reported one")
	}
	for i, m := range []*baton.Message{a, b, c} {
		if key, ok := s.Key(src.ID, m.ID); !ok || key != 0 {
			t.Errorf("Key before SetKey: %d, %v; want 0, true", key, ok)
		}
		if !s.SetKey(src.ID, m.ID, uint64(10+i)) {
			t.Fatalf("SetKey(%s) found no message", m.ID)
		}
	}

	var kept []uint64
	_, err := s.MessageBrowseFunc(t.Context(), baton.MessageBrowseParams{QueueID: src.ID, Now: base, Limit: 10}, func(_ string, key uint64) bool {
		kept = append(kept, key)
		return true
	})
	if err != nil || len(kept) != 3 {
		t.Errorf("browse: keep saw keys %v, %v; want 3", kept, err)
	}

	out, err := s.MessageMove(t.Context(), baton.MessageMoveParams{QueueID: src.ID, ToQueueID: dst.ID, MessageID: b.ID, Now: base})
	if err != nil || out.Result != baton.LeaseCurrent {
		t.Fatalf("move: %+v, %v", out, err)
	}
	if key, ok := s.Key(dst.ID, b.ID); !ok || key != 11 {
		t.Errorf("Key in the target after a move: %d, %v; want 11, true", key, ok)
	}
	if _, ok := s.Key(src.ID, b.ID); ok {
		t.Errorf("Key in the source after a move found the message")
	}

	if _, err := s.MessageDelete(t.Context(), baton.MessageDeleteParams{QueueID: src.ID, MessageID: c.ID, Now: base}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Key(src.ID, c.ID); ok {
		t.Errorf("Key after delete found the message")
	}
	if n, err := s.MessageExpire(t.Context(), src.ID, base.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("expire: %d, %v; want 1", n, err)
	}
	if want := []drop{{src.ID, a.ID, 10}}; len(drops) != 1 || drops[0] != want[0] {
		t.Errorf("ExpiredFunc told %v, want %v", drops, want)
	}
}

// Messages counts what every queue holds: sends add, moves do not, and a
// purge or a queue's deletion takes its messages away.
func TestMessages(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	src, dst := storetest.NewQueue(storetest.QueueID(1), "src"), storetest.NewQueue(storetest.QueueID(2), "dst")
	storetest.MustCreateQueue(t, s, src)
	storetest.MustCreateQueue(t, s, dst)
	a, b, c := storetest.NewMessage(1, base), storetest.NewMessage(2, base), storetest.NewMessage(3, base)
	storetest.MustSend(t, s, src.ID, a, b)
	storetest.MustSend(t, s, dst.ID, c)
	if n := s.Messages(); n != 3 {
		t.Fatalf("after three sends: %d messages, want 3", n)
	}
	if _, err := s.MessageMove(t.Context(), baton.MessageMoveParams{QueueID: src.ID, ToQueueID: dst.ID, MessageID: a.ID, Now: base}); err != nil {
		t.Fatal(err)
	}
	if n := s.Messages(); n != 3 {
		t.Errorf("after a move: %d messages, want 3", n)
	}
	if err := s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: storetest.Region, Account: storetest.Account, Name: "dst", Now: base, PurgedCutoff: base.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if n := s.Messages(); n != 1 {
		t.Errorf("after purging the queue of two: %d messages, want 1", n)
	}
	if err := s.QueueDelete(t.Context(), storetest.Region, storetest.Account, "src", base); err != nil {
		t.Fatal(err)
	}
	if n := s.Messages(); n != 0 {
		t.Errorf("after deleting the other queue: %d messages, want 0", n)
	}
}
