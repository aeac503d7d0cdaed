package memstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
)

// BenchmarkReceiveRequeued receives ten messages at a time from a backlog
// of 100,000 whose leases lapse before the next receive: every receive
// finds the ten it leased last visible again, sent before the rest.
func BenchmarkReceiveRequeued(b *testing.B) {
	const n = 100000
	ctx := context.Background()
	s := memstore.New()
	if err := s.QueueCreate(ctx, baton.QueueCreateParams{Queue: &baton.Queue{ID: 1, Account: "000000000000", Name: "bench"}}); err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msgs := make([]*baton.Message, n)
	for i := range msgs {
		sent := now.Add(time.Duration(i) * time.Microsecond)
		msgs[i] = &baton.Message{ID: strconv.Itoa(i), Body: "b", SentAt: sent, VisibleAt: sent}
	}
	if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: 1, Messages: msgs}); err != nil {
		b.Fatal(err)
	}
	now = now.Add(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		got, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: 1, Now: now, Max: 10, VisibleAt: now.Add(time.Second)})
		if err != nil || len(got) != 10 {
			b.Fatalf("received %d: %v", len(got), err)
		}
		now = now.Add(time.Second)
	}
}
