package pebblestore_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// A purge or a queue's deletion deletes its messages' records with range
// deletions, in one small commit: none is loaded again, and messages that
// came after a purge live on, also when a restart set the pos counter
// below the purge's mark.
func TestPurgeAndDeleteDeleteRanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	purged := storetest.NewQueue(storetest.QueueID(1), "purged")
	deleted := storetest.NewQueue(storetest.QueueID(2), "deleted")
	kept := storetest.NewQueue(storetest.QueueID(3), "kept")
	for _, q := range []*baton.Queue{purged, deleted, kept} {
		storetest.MustCreateQueue(t, s, q)
	}
	send := func(s *pebblestore.Store, q *baton.Queue, from, n int) {
		t.Helper()
		msgs := make([]*baton.Message, 0, n)
		for i := range n {
			msgs = append(msgs, storetest.NewMessage(from+i, base))
		}
		for len(msgs) > 0 {
			k := min(len(msgs), 10)
			storetest.MustSend(t, s, q.ID, msgs[:k]...)
			msgs = msgs[k:]
		}
	}
	send(s, purged, 1, 2500)
	send(s, deleted, 3000, 10)
	send(s, kept, 4000, 3)
	if err := s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: purged.Region, Account: purged.Account, Name: purged.Name, Now: at(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := s.QueueDelete(t.Context(), deleted.Region, deleted.Account, deleted.Name, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := pebblestore.Messages(t, s); got != 3 {
		t.Errorf("message records right after the purge and the deletion: %d, want the 3 untouched", got)
	}
	send(s, purged, 5000, 2) // after the purge: they live

	check := func(s *pebblestore.Store, when string) {
		t.Helper()
		now := at(time.Minute)
		if st := storetest.MustStats(t, s, purged.ID, now); st.Visible != 2 || st.InFlight != 0 {
			t.Errorf("%s: the purged queue has %+v, want the 2 sent after the purge visible", when, st)
		}
		if st := storetest.MustStats(t, s, kept.ID, now); st.Visible != 3 {
			t.Errorf("%s: the untouched queue has %+v, want 3 visible", when, st)
		}
		if _, err := s.QueueGet(t.Context(), deleted.Region, deleted.Account, deleted.Name); err == nil {
			t.Errorf("%s: the deleted queue is back", when)
		}
	}
	check(s, "before a restart")
	s = reopen(t, s, dir)
	check(s, "after a restart")
	now := at(time.Minute)
	got := idsOf(receive(t, s, purged.ID, now, now.Add(lease), 10))
	if want := []string{storetest.MessageID(5000), storetest.MessageID(5001)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the purged queue holds %v, want %v", got, want)
	}

	// The last messages purged: the restart numbers the next below the
	// purge's mark, and the range deletion, older, does not cover it.
	send(s, kept, 6000, 1200)
	if err := s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: kept.Region, Account: kept.Account, Name: kept.Name, Now: at(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: purged.Region, Account: purged.Account, Name: purged.Name, Now: at(time.Hour), PurgedCutoff: at(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, dir)
	if st := storetest.MustStats(t, s, kept.ID, at(time.Hour)); st.Visible != 0 || st.InFlight != 0 || st.Delayed != 0 {
		t.Errorf("the purged queue after a restart: %+v, want empty", st)
	}
	send(s, kept, 8000, 1)
	for i := range 2 {
		s = reopen(t, s, dir)
		if st := storetest.MustStats(t, s, kept.ID, at(time.Hour)); st.Visible != 1 {
			t.Errorf("a message sent after the purge, after %d more restarts: %+v, want it visible", i+1, st)
		}
	}
}

// Sends racing a purge: every send acknowledged before the purge began is
// gone and every send begun after it returned stays, before and after a
// restart; the ones in between may go either way, but the same way both
// times.
func TestPurgeRacingSends(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	q := storetest.NewQueue(storetest.QueueID(1), "orders")
	storetest.MustCreateQueue(t, s, q)

	// A logical clock orders the sends' starts and ends with the purge's.
	type sendRecord struct {
		id           string
		began, ended int
	}
	var (
		mu    sync.Mutex
		clock int
		sends []sendRecord
	)
	tick := func() int { mu.Lock(); defer mu.Unlock(); clock++; return clock }
	const senders, each = 4, 300
	var wg sync.WaitGroup
	for w := range senders {
		wg.Go(func() {
			for i := range each {
				m := storetest.NewMessage(w*each+i+1, base)
				began := tick()
				storetest.MustSend(t, s, q.ID, m)
				ended := tick()
				mu.Lock()
				sends = append(sends, sendRecord{m.ID, began, ended})
				mu.Unlock()
			}
		})
	}
	poll.For(t, 10*time.Second, func() error {
		if n := storetest.MustStats(t, s, q.ID, base).Visible; n < senders*each/3 {
			return fmt.Errorf("%d sent so far", n)
		}
		return nil
	})
	purgeStart := tick()
	if err := s.QueuePurge(t.Context(), baton.QueuePurgeParams{Region: q.Region, Account: q.Account, Name: q.Name, Now: at(time.Second)}); err != nil {
		t.Fatal(err)
	}
	purgeEnd := tick()
	wg.Wait()

	var gone, kept []string
	for _, sd := range sends {
		switch {
		case sd.ended < purgeStart:
			gone = append(gone, sd.id)
		case sd.began > purgeEnd:
			kept = append(kept, sd.id)
		}
	}
	if len(gone) == 0 || len(kept) == 0 {
		t.Fatalf("%d sends before the purge and %d after it: the race did not happen", len(gone), len(kept))
	}
	live := func(s *pebblestore.Store, now time.Time) map[string]bool {
		out := map[string]bool{}
		for {
			got := receive(t, s, q.ID, now, now.Add(lease), 10)
			if len(got) == 0 {
				return out
			}
			for _, m := range got {
				out[m.ID] = true
			}
		}
	}
	judge := func(when string, got map[string]bool) {
		t.Helper()
		for _, id := range gone {
			if got[id] {
				t.Errorf("%s: %s, sent before the purge, is back", when, id)
			}
		}
		for _, id := range kept {
			if !got[id] {
				t.Errorf("%s: %s, sent after the purge, is lost", when, id)
			}
		}
	}
	before := live(s, at(time.Minute))
	judge("before a restart", before)
	s = reopen(t, s, dir)
	// The leases taken above have lapsed by then.
	after := live(s, at(time.Hour))
	judge("after a restart", after)
	if fmt.Sprint(slices.Sorted(maps.Keys(after))) != fmt.Sprint(slices.Sorted(maps.Keys(before))) {
		t.Errorf("after a restart %d messages, before it %d, not the same ones", len(after), len(before))
	}
	if n := pebblestore.Messages(t, s); n != len(after) {
		t.Errorf("%d message records after a restart, want the %d live", n, len(after))
	}
}
