package pebblestore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/storetest"
)

// After a reopen the index holds no body: a browse reads them from disk,
// and filters by body in the database, purged and moved messages left out.
func TestBrowseAfterReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	other := storetest.NewQueue(storetest.QueueID(2), "other")
	storetest.MustCreateQueue(t, s, q)
	storetest.MustCreateQueue(t, s, other)
	var msgs []*baton.Message
	for i, body := range []string{"apple", "banana", "cherry apple", "date"} {
		m := storetest.NewMessage(i+1, at(time.Duration(i)*time.Millisecond))
		m.Body = body
		msgs = append(msgs, m)
	}
	storetest.MustSend(t, s, q.ID, msgs...)
	if _, err := s.MessageMove(t.Context(), baton.MessageMoveParams{QueueID: q.ID, MessageID: storetest.MessageID(3), ToQueueID: other.ID, Now: at(time.Second)}); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, dir)
	now := at(time.Minute)
	page := storetest.MustBrowse(t, s, baton.MessageBrowseParams{QueueID: q.ID, Now: now, Limit: 10})
	var bodies []string
	for _, m := range page.Messages {
		bodies = append(bodies, m.Body)
	}
	if want := []string{"apple", "banana", "date"}; !slices.Equal(bodies, want) {
		t.Errorf("bodies after reopen: %q, want %q", bodies, want)
	}
	for queueID, want := range map[uint64]string{q.ID: storetest.MessageID(1), other.ID: storetest.MessageID(3)} {
		page = storetest.MustBrowse(t, s, baton.MessageBrowseParams{QueueID: queueID, Now: now, BodyContains: "apple", Limit: 10})
		if len(page.Messages) != 1 || page.Messages[0].ID != want {
			t.Errorf("queue %d, bodies holding apple: %v, want [%s]", queueID, page.Messages, want)
		}
	}
}
