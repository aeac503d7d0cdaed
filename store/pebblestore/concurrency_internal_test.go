package pebblestore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// indexRow is a message as the index holds it, with its row.
type indexRow struct {
	queueID uint64
	pos     int64
	state   []byte // appendState
}

// indexRows returns, as the index holds them, the messages of the queues
// among those numbered 1 to n (concurrencyID).
func indexRows(t *testing.T, s *Store, queueIDs []uint64, n int64) map[string]indexRow {
	t.Helper()
	out := make(map[string]indexRow)
	for _, q := range queueIDs {
		i := s.lockQueue(q)
		rows := make(map[string]int64)
		for k := range n {
			if pos, ok := s.rowOf(q, concurrencyID(k+1)); ok {
				rows[concurrencyID(k+1)] = pos
			}
		}
		s.stripes[i].Unlock()
		for id, pos := range rows {
			// A lease no message has: reads the message, changes nothing.
			o, err := s.index.MessageChangeVisibility(t.Context(), baton.MessageChangeVisibilityParams{QueueID: q, MessageID: id, Epoch: ^uint32(0)})
			if err != nil || o.Message == nil {
				t.Errorf("message %s has row %d in queue %d but no index entry: %v", id, pos, q, err)
				continue
			}
			out[id] = indexRow{queueID: q, pos: pos, state: appendState(nil, o.Message)}
		}
	}
	return out
}

func concurrencyID(k int64) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", k) }

// Sends, receives, deletes, visibility changes, moves, expiries and purges
// race on the same messages of three queues, each call with the time its
// caller read, so calls reach the store out of time order as they do in a
// server. The database must end as the index: reopened, the store holds
// every message where it was, in the same state. Run it with -race.
func TestConcurrentHistoryReloads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(t.Context(), dir, Options{Durability: DurabilityRelaxed})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var clock atomic.Int64
	now := func() time.Time { return base.Add(time.Duration(clock.Add(1)) * time.Millisecond) }
	queueIDs := []uint64{1, 2, 3}
	for _, id := range queueIDs {
		q := &baton.Queue{ID: id, Region: "us-east-1", Account: "000000000000", Name: fmt.Sprint("q", id), Attributes: baton.DefaultQueueAttributes(), CreatedAt: base, ModifiedAt: base}
		if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: q}); err != nil {
			t.Fatal(err)
		}
	}
	var sent atomic.Int64
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 400 {
				qi := r.IntN(len(queueIDs))
				q := queueIDs[qi]
				switch op := r.IntN(12); {
				case op < 4:
					k, sentAt := sent.Add(1), now()
					m := &baton.Message{ID: concurrencyID(k), Body: fmt.Sprint("body ", k), SentAt: sentAt,
						VisibleAt: sentAt.Add(time.Duration(r.IntN(3)) * time.Millisecond)}
					if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: q, Messages: []*baton.Message{m}}); err != nil {
						t.Errorf("send: %v", err)
					}
				case op < 11:
					at := now()
					got, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: q, Now: at, Max: 3,
						VisibleAt: at.Add(time.Duration(r.IntN(50)) * time.Millisecond)})
					if err != nil {
						t.Errorf("receive: %v", err)
					}
					for _, m := range got {
						if m.Body == "" {
							t.Errorf("received %s without its body", m.ID)
						}
						at := now()
						switch r.IntN(8) {
						case 0:
							_, err = s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: q, MessageID: m.ID, Epoch: m.Epoch, Now: at, RequireLive: r.IntN(2) == 0})
						case 1:
							_, err = s.MessageDeleteBatch(ctx, baton.MessageDeleteBatchParams{QueueID: q, Now: at, Entries: []baton.LeaseRef{{MessageID: m.ID, Epoch: m.Epoch}}})
						case 2:
							// By the lease or, as a move task does, by none.
							_, err = s.MessageMove(ctx, baton.MessageMoveParams{QueueID: q, MessageID: m.ID, Epoch: m.Epoch * uint32(r.IntN(2)),
								ToQueueID: queueIDs[(qi+1+r.IntN(2))%len(queueIDs)], Now: at, ReceiveCount: m.ReceiveCount})
						case 3:
							_, err = s.MessageChangeVisibility(ctx, baton.MessageChangeVisibilityParams{QueueID: q, MessageID: m.ID, Epoch: m.Epoch, Now: at, VisibleAt: at.Add(5 * time.Millisecond)})
						}
						if err != nil {
							t.Errorf("act on %s: %v", m.ID, err)
						}
					}
				default:
					if r.IntN(20) == 0 {
						if _, err := s.MessageExpire(ctx, q, base.Add(time.Duration(clock.Load()/4)*time.Millisecond)); err != nil {
							t.Errorf("expire: %v", err)
						}
					}
					if r.IntN(200) == 0 {
						s.QueuePurge(ctx, baton.QueuePurgeParams{Region: "us-east-1", Account: "000000000000", Name: fmt.Sprint("q", q), Now: now(), PurgedCutoff: base.Add(time.Hour)})
					}
				}
			}
		})
	}
	wg.Wait()
	want := indexRows(t, s, queueIDs, sent.Load())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(t.Context(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := indexRows(t, s, queueIDs, sent.Load())
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			t.Errorf("message %s lost by the reopen", id)
		case g.queueID != w.queueID || g.pos != w.pos || !bytes.Equal(g.state, w.state):
			t.Errorf("message %s after the reopen: got %+v, want %+v", id, g, w)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("message %s came back with the reopen", id)
		}
	}
	if len(want) == 0 {
		t.Errorf("no message left of %d sent: the test checks nothing", sent.Load())
	}
}
