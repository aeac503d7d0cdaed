package pebblestore_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// BenchmarkSend measures durable single-message sends of 1 KiB bodies (and
// random ids, as the engine's) by 1,
// 8 and 64 concurrent senders, each waiting for its commit as a request
// does, next to the same on the in-memory store. It reports rows (messages)
// and commits per second and the median and 99th-percentile latency of a
// send, and the process's CPU per send (the writer's included).
//
//	go test -run '^$' -bench BenchmarkSend -benchtime 20000x ./store/pebblestore
func BenchmarkSend(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) (baton.Store, func() pebblestore.Stats)
	}{
		{"embedded-full", openBench(pebblestore.DurabilityFull)},
		{"embedded-relaxed", openBench(pebblestore.DurabilityRelaxed)},
		{"memory", func(*testing.B) (baton.Store, func() pebblestore.Stats) { return memstore.New(), nil }},
	}
	for _, st := range stores {
		for _, senders := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("store=%s/senders=%d", st.name, senders), func(b *testing.B) {
				s, stats := st.open(b)
				benchSend(b, s, stats, senders)
			})
		}
	}
}

func openBench(d pebblestore.Durability) func(b *testing.B) (baton.Store, func() pebblestore.Stats) {
	return func(b *testing.B) (baton.Store, func() pebblestore.Stats) {
		s, err := pebblestore.Open(b.Context(), b.TempDir(), pebblestore.Options{Durability: d})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s, s.Stats
	}
}

func benchSend(b *testing.B, s baton.Store, stats func() pebblestore.Stats, senders int) {
	q := storetest.NewQueue(storetest.QueueID(1), "bench")
	storetest.MustCreateQueue(b, s, q)
	body := strings.Repeat("b", 1024)
	var next atomic.Int64
	lat := make([][]time.Duration, senders)
	var before pebblestore.Stats
	if stats != nil {
		before = stats()
	}
	b.ResetTimer()
	cpu := bench.ProcessCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range senders {
		wg.Go(func() {
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				m := &baton.Message{
					ID: ids.NewUUID(), Body: body,
					SenderID: storetest.Account, SentAt: base, VisibleAt: base,
				}
				t0 := time.Now()
				if _, err := s.MessageSend(b.Context(), baton.MessageSendParams{QueueID: q.ID, Messages: []*baton.Message{m}}); err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.ReportMetric(float64(bench.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	if stats != nil {
		after := stats()
		b.ReportMetric(float64(after.Commits-before.Commits)/elapsed.Seconds(), "commits/s")
	}
	b.ReportMetric(0, "ns/op") // rows/s says it better
}
