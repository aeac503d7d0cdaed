package memstore_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/storetest"
)

// BenchmarkIndexMemory measures the heap the index of a durable store holds
// per message: a backlog of bare messages (no body, as the durable store
// keeps them) on one standard queue, 1,000,000 or BATON_BENCH_MESSAGES,
// sent ten at a time or restored. It reports the live heap per message
// once collected (heap-bytes/msg), with the backlog visible (read once),
// and the time the fill took per message.
//
//	go test ./store/memstore -run '^$' -bench IndexMemory -benchtime 1x
func BenchmarkIndexMemory(b *testing.B) {
	n := storetest.BrowseBenchMessages(b)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	bare := func(i int) *baton.Message {
		at := base.Add(time.Duration(i) * time.Microsecond)
		return &baton.Message{ID: ids.NewUUID(), SenderID: "AKIDBENCH", SentAt: at, VisibleAt: at}
	}
	q := &baton.Queue{ID: 1, Account: "000000000000", Name: "backlog"}
	b.Run("by=send", func(b *testing.B) {
		benchIndexMemory(b, n, base, func(s *memstore.Store) {
			if err := s.QueueCreate(context.Background(), baton.QueueCreateParams{Queue: q}); err != nil {
				b.Fatal(err)
			}
			msgs := make([]*baton.Message, 10)
			for i := 0; i < n; i += len(msgs) {
				for j := range msgs {
					msgs[j] = bare(i + j)
				}
				if _, err := s.MessageSend(context.Background(), baton.MessageSendParams{QueueID: 1, Messages: msgs}); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("by=restore", func(b *testing.B) {
		benchIndexMemory(b, n, base, func(s *memstore.Store) {
			if err := s.QueueRestore(memstore.QueueRestoreParams{Queue: q, Messages: n}); err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if err := s.MessageRestore(1, bare(i), uint64(i+1)); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// benchIndexMemory fills a new index with fill and reports its heap.
func benchIndexMemory(b *testing.B, n int, base time.Time, fill func(s *memstore.Store)) {
	var heap uint64
	var took time.Duration
	for b.Loop() {
		before := storetest.HeapInUse()
		start := time.Now()
		s := memstore.NewWithOptions(memstore.Options{ExpiredFunc: func(uint64, string, uint64) {}})
		fill(s)
		took = time.Since(start)
		now := base.Add(time.Hour)
		st, err := s.MessageStats(context.Background(), baton.MessageStatsParams{QueueID: 1, Now: now})
		if err != nil || st.Visible != n {
			b.Fatalf("stats: %+v, %v; want %d visible", st, err, n)
		}
		heap = storetest.HeapInUse() - before
		runtime.KeepAlive(s)
	}
	b.ReportMetric(float64(heap)/float64(n), "heap-bytes/msg")
	b.ReportMetric(float64(took.Nanoseconds())/float64(n), "fill-ns/msg")
	b.ReportMetric(0, "ns/op")
}
