package memstore

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
)

// TestIndexChurn adds and removes messages of a queue in random order, past
// the size where id tables split and chunks are let go, and checks after
// each round that every message is found by its id, with its key, and no
// removed one is; then that a drained queue keeps no slab and no table.
func TestIndexChurn(t *testing.T) {
	t.Parallel()
	s := New()
	q := &baton.Queue{ID: 1, Account: "000000000000", Name: "churn"}
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: q}); err != nil {
		t.Fatal(err)
	}
	qs := s.lookupID(1)
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	live := map[string]uint64{}
	var gone []string
	next := uint64(1)
	// slots counts the slab's slots (but none's), and the free ones of its
	// chunks at most half full.
	slots := func() (all, free int) {
		for i, c := range qs.es.chunks {
			n := len(c.es)
			if i == 0 && n > 0 {
				n--
			}
			all += n
			if c.live <= n/2 {
				free += n - c.live
			}
		}
		return all, free
	}
	add := func(n int) {
		before, free := slots()
		defer func() {
			// The free slots of chunks at most half full are taken
			// before new ones.
			if got, _ := slots(); got-before > max(0, n-free) {
				t.Fatalf("%d entries added with %d slots free took %d new slots", n, free, got-before)
			}
		}()
		for range n {
			id := ids.NewUUID()
			if rng.IntN(50) == 0 {
				id = "other-" + strconv.FormatUint(next, 10)
			}
			m := &baton.Message{ID: id, SentAt: now, VisibleAt: now}
			if _, err := s.MessageSend(t.Context(), baton.MessageSendParams{QueueID: 1, Messages: []*baton.Message{m}}); err != nil {
				t.Fatal(err)
			}
			if !s.SetKey(1, id, next) {
				t.Fatalf("SetKey(%s) found no message", id)
			}
			live[id] = next
			next++
		}
	}
	remove := func(n int) {
		for id := range live {
			if n == 0 {
				return
			}
			n--
			out, err := s.MessageDelete(t.Context(), baton.MessageDeleteParams{QueueID: 1, MessageID: id, Now: now})
			if err != nil || out.Result == baton.LeaseGone {
				t.Fatalf("delete %s: %+v, %v", id, out, err)
			}
			delete(live, id)
			gone = append(gone, id)
		}
	}
	check := func() {
		t.Helper()
		for id, want := range live {
			if key, ok := s.Key(1, id); !ok || key != want {
				t.Fatalf("Key(%s) = %d, %v; want %d, true", id, key, ok, want)
			}
		}
		for _, id := range gone {
			if _, ok := s.Key(1, id); ok {
				t.Fatalf("Key(%s) found a deleted message", id)
			}
		}
		if qs.es.n != len(live) {
			t.Fatalf("slab holds %d entries, want %d", qs.es.n, len(live))
		}
	}
	for _, round := range []struct{ add, remove int }{{20000, 5000}, {3000, 15000}, {30000, 1000}, {0, 20000}} {
		add(round.add)
		remove(round.remove)
		check()
	}
	remove(len(live))
	check()
	if qs.es.chunks != nil || qs.ids.dir != nil || len(qs.ids.others) != 0 {
		t.Errorf("drained queue keeps %d chunks, %d id tables, %d other ids", len(qs.es.chunks), len(qs.ids.dir), len(qs.ids.others))
	}
}
