package memstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// TestFIFOOrderMatchesFullScan drives a FIFO queue through random sends,
// receives, releases, deletes and lapses, and checks before each receive
// that the groups it takes come in the order a pass over every group gives:
// the heap, brought up to date only for the groups marked changed, never
// drifts from the rule.
func TestFIFOOrderMatchesFullScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New()
	q := &baton.Queue{ID: 1, Account: "000000000000", Name: "orders.fifo", Attributes: baton.QueueAttributes{FifoQueue: true}}
	if err := s.QueueCreate(ctx, baton.QueueCreateParams{Queue: q}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(34, 1))
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var held []*baton.Message // received, perhaps still in flight
	n := 0
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 4: // send one to three messages, some delayed
			var msgs []*baton.Message
			var keys []string
			for range 1 + rng.IntN(3) {
				n++
				id := fmt.Sprintf("m%d", n)
				m := &baton.Message{ID: id, Body: "b", GroupID: fmt.Sprintf("g%d", rng.IntN(8)), DedupID: id, SentAt: now, VisibleAt: now}
				if rng.IntN(5) == 0 {
					m.VisibleAt = now.Add(time.Duration(1+rng.IntN(20)) * time.Second)
				}
				msgs, keys = append(msgs, m), append(keys, id)
			}
			if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: 1, Messages: msgs, DedupKeys: keys, DedupCutoff: now.Add(-time.Hour)}); err != nil {
				t.Fatal(err)
			}
		case op < 7: // receive, some with visibility 0
			want := fullScanOrder(s, now)
			visibleAt := now.Add(30 * time.Second)
			if rng.IntN(4) == 0 {
				visibleAt = now
			}
			got, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: 1, Now: now, Max: 1 + rng.IntN(10), VisibleAt: visibleAt})
			if err != nil {
				t.Fatal(err)
			}
			var groups []string
			for _, m := range got {
				if len(groups) == 0 || groups[len(groups)-1] != m.GroupID {
					groups = append(groups, m.GroupID)
				}
			}
			if len(groups) > len(want) || !slices.Equal(groups, want[:len(groups)]) {
				t.Fatalf("step %d: receive took groups %v, want a prefix of %v", step, groups, want)
			}
			held = append(held, got...)
		case op < 8 && len(held) > 0: // release or delete a message received
			i := rng.IntN(len(held))
			m := held[i]
			held = slices.Delete(held, i, i+1)
			var err error
			if rng.IntN(2) == 0 {
				_, err = s.MessageChangeVisibility(ctx, baton.MessageChangeVisibilityParams{QueueID: 1, MessageID: m.ID, Epoch: m.Epoch, Now: now, VisibleAt: now})
			} else {
				_, err = s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: 1, MessageID: m.ID, Epoch: m.Epoch, Now: now, RequireLive: true})
			}
			if err != nil {
				t.Fatal(err)
			}
		default: // time passes; leases may lapse
			now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
		}
	}
}

// fullScanOrder returns, at now, the ids of the groups a receive may take
// from, in the order of the rule, computed from every group afresh.
func fullScanOrder(s *Store, now time.Time) []string {
	qs := s.lookupID(1)
	qs.mu.Lock()
	defer qs.mu.Unlock()
	qs.promote(now)
	type open struct {
		id  string
		key groupKey
	}
	var all []open
	for id, g := range qs.groups {
		if k, ok := qs.headKey(g); ok {
			all = append(all, open{id, k})
		}
	}
	slices.SortFunc(all, func(a, b open) int {
		switch {
		case a.key.less(b.key):
			return -1
		case b.key.less(a.key):
			return 1
		}
		return 0
	})
	ids := make([]string, len(all))
	for i, o := range all {
		ids[i] = o.id
	}
	return ids
}
