package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// TestMessagesInFlight: every queue's messages in flight, and only those
// (not the visible, not the delayed), at most perQueue of a queue, those
// whose lease ends first, without their payload.
func TestMessagesInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	a, b, idle := mustQueue(t, s, "a", false), mustQueue(t, s, "b", false), mustQueue(t, s, "idle", false)
	send := func(q uint64, ids ...string) {
		t.Helper()
		var ms []*baton.Message
		for _, id := range ids {
			ms = append(ms, testMessage(id, now))
		}
		if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: q, Messages: ms}); err != nil {
			t.Fatal(err)
		}
	}
	lease := func(q uint64, n int, d time.Duration) {
		t.Helper()
		got, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: q, Now: now, Max: n,
			VisibleAt: now.Add(d), RetentionCutoff: now.Add(-time.Hour)})
		if err != nil || len(got) != n {
			t.Fatalf("receive %d: %d, %v", n, len(got), err)
		}
	}
	send(a, "a1", "a2", "a3")
	lease(a, 1, time.Minute)
	lease(a, 1, 2*time.Minute) // a3 stays visible
	send(b, "b1")
	lease(b, 1, time.Minute)
	delayed := testMessage("b2", now)
	delayed.VisibleAt = now.Add(time.Hour)
	if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: b, Messages: []*baton.Message{delayed}}); err != nil {
		t.Fatal(err)
	}
	send(idle, "i1")

	got, err := s.MessagesInFlight(ctx, now, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[a]) != 2 || len(got[b]) != 1 || got[b][0].ID != "b1" {
		t.Fatalf("in flight: %v; want 2 of a, b1 of b, none of idle", got)
	}
	for _, ms := range got {
		for _, m := range ms {
			if !m.Leased || !m.VisibleAt.After(now) || m.Epoch == 0 || m.Body != "" {
				t.Errorf("message %+v: want leased, in flight, with its epoch, without its body", m)
			}
		}
	}
	first := got[a][0].ID
	if got, err = s.MessagesInFlight(ctx, now, 1); err != nil || len(got[a]) != 1 || got[a][0].ID != first || !got[a][0].VisibleAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("one a queue: %v, %v; want a's lease that ends first", got, err)
	}

	// A fair queue's messages in flight with a group id and without one
	// are in two indexes of states: the lease that ends first is found
	// whichever holds it.
	fair := mustQueue(t, s, "fair", false)
	grouped := testMessage("g1", now)
	grouped.GroupID = "g"
	if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: fair, Messages: []*baton.Message{grouped, testMessage("u1", now)}}); err != nil {
		t.Fatal(err)
	}
	var ends []string
	for _, d := range []time.Duration{time.Minute, 2 * time.Minute} {
		ms, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: fair, Now: now, Max: 1,
			VisibleAt: now.Add(d), RetentionCutoff: now.Add(-time.Hour)})
		if err != nil || len(ms) != 1 {
			t.Fatalf("receive 1 of the fair queue: %d, %v", len(ms), err)
		}
		ends = append(ends, ms[0].ID)
	}
	if got, err = s.MessagesInFlight(ctx, now, 10); err != nil || len(got[fair]) != 2 {
		t.Fatalf("the fair queue: %v, %v; want both messages", got[fair], err)
	}
	if got, err = s.MessagesInFlight(ctx, now, 1); err != nil || len(got[fair]) != 1 || got[fair][0].ID != ends[0] {
		t.Fatalf("one of the fair queue: %v, %v; want %s, whose lease ends first", got[fair], err, ends[0])
	}
}
