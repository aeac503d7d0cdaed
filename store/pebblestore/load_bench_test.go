package pebblestore_test

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// BenchmarkOpen measures the rebuild of the in-memory index at Open on a
// data directory holding a backlog of 1 KiB messages (200,000, or
// BATON_BENCH_MESSAGES) on one queue: a standard queue, or a FIFO queue
// with ten groups and a deduplication id per message. It reports the time an Open takes (load-s) and the heap the open store holds
// per message once collected (heap-bytes/msg): the index's own size,
// without the garbage of the load), and the time the first receive takes
// after it (first-receive-s), which makes the restored messages visible.
//
//	go test -run '^$' -bench BenchmarkOpen -benchtime 3x ./store/pebblestore
func BenchmarkOpen(b *testing.B) {
	n := 200_000
	if v := os.Getenv("BATON_BENCH_MESSAGES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("BATON_BENCH_MESSAGES=%q: want a positive count", v)
		}
	}
	for _, fifo := range []bool{false, true} {
		name := "queue=standard"
		if fifo {
			name = "queue=fifo"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			fillDir(b, dir, n, fifo)
			benchOpen(b, dir, n)
		})
	}
}

func benchOpen(b *testing.B, dir string, n int) {
	var heap uint64
	var took, first time.Duration
	for b.Loop() {
		before := storetest.HeapInUse()
		start := time.Now()
		s, err := pebblestore.Open(b.Context(), dir, pebblestore.Options{Durability: pebblestore.DurabilityRelaxed})
		if err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		heap = storetest.HeapInUse() - before
		start = time.Now()
		now := time.Now()
		got, err := s.MessageReceive(b.Context(), baton.MessageReceiveParams{QueueID: storetest.QueueID(1), Now: now, Max: 1, VisibleAt: now.Add(time.Hour)})
		first += time.Since(start)
		if err != nil || len(got) != 1 {
			b.Fatalf("first receive: %d messages, %v", len(got), err)
		}
		runtime.KeepAlive(s)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(took.Seconds()/float64(b.N), "load-s")
	b.ReportMetric(first.Seconds()/float64(b.N), "first-receive-s")
	b.ReportMetric(float64(heap)/float64(n), "heap-bytes/msg")
	b.ReportMetric(0, "ns/op")
}

// fillDir stores n messages in a store in dir, on a standard queue or on
// a FIFO queue in ten groups, sent in batches of ten by eight senders as
// the engine would send them.
func fillDir(b *testing.B, dir string, n int, isFIFO bool) {
	s, err := pebblestore.Open(b.Context(), dir, pebblestore.Options{Durability: pebblestore.DurabilityRelaxed})
	if err != nil {
		b.Fatal(err)
	}
	q := storetest.NewQueue(storetest.QueueID(1), "backlog")
	if isFIFO {
		q = storetest.NewQueue(storetest.QueueID(1), "backlog.fifo")
		q.Attributes.FifoQueue = true
	}
	storetest.MustCreateQueue(b, s, q)
	body := strings.Repeat("b", 1024)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				from := next.Add(10) - 10
				if from >= int64(n) || b.Failed() {
					return
				}
				p := baton.MessageSendParams{QueueID: q.ID, DedupCutoff: base.Add(-5 * time.Minute)}
				for i := from; i < min(from+10, int64(n)); i++ {
					m := &baton.Message{ID: ids.NewUUID(), Body: body, SenderID: storetest.Account, SentAt: base, VisibleAt: base}
					if isFIFO {
						m.GroupID = "group-" + strconv.FormatInt(i%10, 10)
						m.DedupID = ids.NewUUID()
						p.DedupKeys = append(p.DedupKeys, m.DedupID)
					}
					p.Messages = append(p.Messages, m)
				}
				if _, err := s.MessageSend(b.Context(), p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if b.Failed() {
		b.FailNow()
	}
}
