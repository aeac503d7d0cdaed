package pebblestore_test

import (
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/storetest"
)

// TestBatchesCommitOnceAndLast: a batch delete or visibility change is one
// transaction, and what it did is there after a restart.
func TestBatchesCommitOnceAndLast(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	storetest.MustCreateQueue(t, s, q)
	var msgs []*baton.Message
	for n := 1; n <= 10; n++ {
		msgs = append(msgs, storetest.NewMessage(n, base))
	}
	storetest.MustSend(t, s, q.ID, msgs...)
	if got := receive(t, s, q.ID, base, at(lease), 10); len(got) != 10 {
		t.Fatalf("receive: got %v, want 10 messages", idsOf(got))
	}

	now := at(time.Second)
	var dels []baton.LeaseRef
	var changes []baton.VisibilityChange
	for n := 1; n <= 10; n++ {
		if n <= 6 {
			dels = append(dels, baton.LeaseRef{MessageID: storetest.MessageID(n), Epoch: 1})
		} else {
			// 7 and 8 are released, 9 and 10 held for an hour.
			end := now
			if n > 8 {
				end = at(time.Hour)
			}
			changes = append(changes, baton.VisibilityChange{MessageID: storetest.MessageID(n), Epoch: 1, VisibleAt: end})
		}
	}
	before := s.Stats()
	if _, err := s.MessageDeleteBatch(t.Context(), baton.MessageDeleteBatchParams{QueueID: q.ID, Now: now, Entries: dels}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MessageChangeVisibilityBatch(t.Context(), baton.MessageChangeVisibilityBatchParams{QueueID: q.ID, Now: now, Entries: changes}); err != nil {
		t.Fatal(err)
	}
	after := s.Stats()
	if n, c := after.Changes-before.Changes, after.Commits-before.Commits; n != 10 || c != 2 {
		t.Errorf("two batches of 6 and 4 took %d transactions of %d changes, want 2 of 10", c, n)
	}
	want := baton.MessageStats{Visible: 2, InFlight: 2, NextVisibleAt: at(time.Hour), OldestSentAt: base}
	if got := storetest.MustStats(t, s, q.ID, now); got != want {
		t.Errorf("stats before reopen: got %+v, want %+v", got, want)
	}

	s = reopen(t, s, dir)
	if got := storetest.MustStats(t, s, q.ID, now); !got.NextVisibleAt.Equal(want.NextVisibleAt) ||
		got.Visible != want.Visible || got.InFlight != want.InFlight {
		t.Errorf("stats after reopen: got %+v, want %+v", got, want)
	}
	got := receive(t, s, q.ID, now, at(lease), 10)
	if ids := idsOf(got); len(ids) != 2 || !(ids[0] == storetest.MessageID(7) && ids[1] == storetest.MessageID(8) ||
		ids[0] == storetest.MessageID(8) && ids[1] == storetest.MessageID(7)) {
		t.Errorf("receive after reopen: got %v, want the two released messages", ids)
	}
}
