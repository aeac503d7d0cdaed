package memstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
)

// BenchmarkDrainDistinctGroups stores a message in each of 100,000 groups
// (a fair standard queue whose senders use their tenant ids) and deletes
// them all: forgetting an emptied group must not cost a pass over the
// others, or draining n groups costs n² under the queue's lock.
func BenchmarkDrainDistinctGroups(b *testing.B) {
	const n = 100000
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for b.Loop() {
		s := memstore.New()
		if err := s.QueueCreate(ctx, baton.QueueCreateParams{Queue: &baton.Queue{ID: 1, Account: "000000000000", Name: "fair"}}); err != nil {
			b.Fatal(err)
		}
		msgs := make([]*baton.Message, n)
		for i := range msgs {
			msgs[i] = &baton.Message{ID: strconv.Itoa(i), Body: "b", GroupID: "g" + strconv.Itoa(i), SentAt: now, VisibleAt: now}
		}
		if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: 1, Messages: msgs}); err != nil {
			b.Fatal(err)
		}
		for i := range msgs {
			if _, err := s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: 1, MessageID: strconv.Itoa(i), Now: now}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDrainDistinctFIFOGroups receives, 10 at a time, and deletes a
// message in each of 100,000 groups of a FIFO queue: finding the groups to
// take from must cost the groups taken and changed, not a pass over all.
func BenchmarkDrainDistinctFIFOGroups(b *testing.B) {
	const n = 100000
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for b.Loop() {
		s := memstore.New()
		q := &baton.Queue{ID: 1, Account: "000000000000", Name: "orders.fifo", Attributes: baton.QueueAttributes{FifoQueue: true}}
		if err := s.QueueCreate(ctx, baton.QueueCreateParams{Queue: q}); err != nil {
			b.Fatal(err)
		}
		msgs := make([]*baton.Message, n)
		keys := make([]string, n)
		for i := range msgs {
			id := strconv.Itoa(i)
			msgs[i] = &baton.Message{ID: id, Body: "b", GroupID: "g" + id, DedupID: id, SentAt: now, VisibleAt: now}
			keys[i] = id
		}
		if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: 1, Messages: msgs, DedupKeys: keys}); err != nil {
			b.Fatal(err)
		}
		for {
			got, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: 1, Now: now, Max: 10, VisibleAt: now.Add(time.Minute)})
			if err != nil {
				b.Fatal(err)
			}
			if len(got) == 0 {
				break
			}
			for _, m := range got {
				if _, err := s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: 1, MessageID: m.ID, Epoch: m.Epoch, Now: now}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}
