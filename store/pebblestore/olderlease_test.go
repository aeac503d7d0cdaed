package pebblestore_test

import (
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/storetest"
)

// A visibility change through an older lease (AnyLease) is committed like
// the holder's own: after a reopen the message is still hidden until the
// new end, whether the change came alone or in a batch.
func TestReopenKeepsChangeThroughOlderLease(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	storetest.MustCreateQueue(t, s, q)
	storetest.MustSend(t, s, q.ID, storetest.NewMessage(1, base), storetest.NewMessage(2, base))
	if got := receive(t, s, q.ID, base, at(10*time.Second), 10); len(got) != 2 {
		t.Fatalf("first receive: got %v, want 2 messages", idsOf(got))
	}
	if got := receive(t, s, q.ID, at(11*time.Second), at(41*time.Second), 10); len(got) != 2 {
		t.Fatalf("second receive: got %v, want 2 messages", idsOf(got))
	}
	now := at(15 * time.Second)
	out := storetest.MustChangeVisibility(t, s, baton.MessageChangeVisibilityParams{
		QueueID: q.ID, MessageID: storetest.MessageID(1), Epoch: 1, Now: now, VisibleAt: at(time.Hour), AnyLease: true,
	})
	if out.Result != baton.LeaseSuperseded {
		t.Errorf("change of message 1 through its first lease: result %d, want LeaseSuperseded", out.Result)
	}
	outs, err := s.MessageChangeVisibilityBatch(t.Context(), baton.MessageChangeVisibilityBatchParams{
		QueueID: q.ID, Now: now, AnyLease: true,
		Entries: []baton.VisibilityChange{{MessageID: storetest.MessageID(2), Epoch: 1, VisibleAt: at(time.Hour)}},
	})
	if err != nil || len(outs) != 1 || outs[0].Result != baton.LeaseSuperseded {
		t.Fatalf("batch change of message 2 through its first lease: %+v, %v", outs, err)
	}

	s = reopen(t, s, dir)
	if got := receive(t, s, q.ID, at(time.Minute), at(2*time.Hour), 10); len(got) != 0 {
		t.Errorf("receive after reopen, before the new end: got %v, want none", idsOf(got))
	}
	if got := receive(t, s, q.ID, at(time.Hour), at(2*time.Hour), 10); len(got) != 2 {
		t.Errorf("receive after reopen at the new end: got %v, want both", idsOf(got))
	}
}
