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
