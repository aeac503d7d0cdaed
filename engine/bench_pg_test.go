package engine_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/store/pgstore"
)

// BenchmarkLifecycleParallel is `baton bench`'s lifecycle without HTTP:
// 32 goroutines, each sending a batch of ten 1 KiB messages, receiving up
// to ten with a long poll and deleting what it received, on the PostgreSQL store (a
// throwaway cluster, fsync off) and, for comparison, on the embedded one.
// Under this load the PostgreSQL store's rounds hold many requests, as in
// the side-by-side (bench/river). cpu-ns/msg is this process's CPU time,
// Baton's side alone (PostgreSQL runs in processes of its own), per
// message deleted; allocs/op and B/op are per round of one goroutine.
//
//	go test -run '^$' -bench LifecycleParallel -benchmem ./engine
func BenchmarkLifecycleParallel(b *testing.B) {
	for _, st := range []struct {
		name string
		open func(b *testing.B) *engine.Engine
	}{
		{"postgres", func(b *testing.B) *engine.Engine {
			s, err := pgstore.Open(b.Context(), pgtest.MustDatabase(b), pgstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			e, _ := benchEngineOn(b, s)
			return e
		}},
		{"embedded", func(b *testing.B) *engine.Engine {
			e, _ := benchEngineOn(b, benchStores[1].open(b))
			return e
		}},
	} {
		b.Run(st.name, func(b *testing.B) {
			e := st.open(b)
			ref := engine.QueueRef{Account: "000000000000", Name: "bench"}
			var deleted atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16) // 32 goroutines on two cores
			start := bench.ProcessCPU()
			b.RunParallel(func(pb *testing.PB) {
				r := newTenRound(e, ref)
				wait := 20 // bench's lifecycle long-polls
				r.recv.WaitTimeSeconds = &wait
				for pb.Next() {
					r.sendTen(b)
					msgs, err := e.ReceiveMessage(context.Background(), ref, r.recv)
					if err != nil {
						b.Error(err)
						return
					}
					if len(msgs) == 0 {
						continue
					}
					del := make([]engine.HandleEntry, len(msgs))
					for i, m := range msgs {
						del[i] = engine.HandleEntry{ID: strconv.Itoa(i), ReceiptHandle: m.ReceiptHandle}
					}
					r.deleteTen(b, del)
					deleted.Add(int64(len(del)))
				}
			})
			if n := deleted.Load(); n > 0 {
				b.ReportMetric(float64(bench.ProcessCPU()-start)/float64(n), "cpu-ns/msg")
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
			}
		})
	}
}
