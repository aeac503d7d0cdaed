package memstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
)

// BenchmarkSendReceiveDelete is the store's share of a lifecycle round: ten
// messages stored, leased by one receive and deleted one by one.
func BenchmarkSendReceiveDelete(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	q := &baton.Queue{ID: 1, Account: "000000000000", Name: "bench"}
	if err := s.QueueCreate(ctx, baton.QueueCreateParams{Queue: q}); err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msgs := make([]*baton.Message, 10)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range msgs {
			msgs[j] = &baton.Message{ID: strconv.Itoa(i*10 + j), Body: "body", SentAt: now, VisibleAt: now}
		}
		if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: 1, Messages: msgs}); err != nil {
			b.Fatal(err)
		}
		got, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: 1, Now: now, Max: 10, VisibleAt: now.Add(time.Minute)})
		if err != nil || len(got) != 10 {
			b.Fatalf("received %d: %v", len(got), err)
		}
		for _, m := range got {
			if _, err := s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: 1, MessageID: m.ID, Epoch: m.Epoch, Now: now}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
