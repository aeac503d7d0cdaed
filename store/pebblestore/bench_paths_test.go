package pebblestore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// BenchmarkPaths measures, one call at a time, the store's send, receive
// and delete of single 1 KiB messages with full durability, allocations
// and the process's CPU per call (cpu-ns/op, the writer's included).
//
//	go test -run '^$' -bench BenchmarkPaths -benchmem ./store/pebblestore
func BenchmarkPaths(b *testing.B) {
	body := strings.Repeat("b", 1024)
	newMsg := func() *baton.Message {
		return &baton.Message{ID: ids.NewUUID(), Body: body, SenderID: storetest.Account, SentAt: base, VisibleAt: base}
	}
	setup := func(b *testing.B, fill int, lease bool) (baton.Store, uint64, []*baton.Message) {
		s, _ := openBench(pebblestore.DurabilityFull)(b)
		q := storetest.NewQueue(storetest.QueueID(1), "bench")
		storetest.MustCreateQueue(b, s, q)
		for n := 0; n < fill; n += 10 {
			msgs := make([]*baton.Message, min(10, fill-n))
			for i := range msgs {
				msgs[i] = newMsg()
			}
			storetest.MustSend(b, s, q.ID, msgs...)
		}
		var leased []*baton.Message
		for lease && len(leased) < fill {
			leased = append(leased, receive(b, s, q.ID, base, base.Add(time.Hour), 10)...)
		}
		return s, q.ID, leased
	}
	measure := func(b *testing.B, call func(n int)) {
		b.ReportAllocs()
		b.ResetTimer()
		start := bench.ProcessCPU()
		for n := range b.N {
			call(n)
		}
		b.ReportMetric(float64(bench.ProcessCPU()-start)/float64(b.N), "cpu-ns/op")
	}
	b.Run("send", func(b *testing.B) {
		s, q, _ := setup(b, 0, false)
		measure(b, func(int) { storetest.MustSend(b, s, q, newMsg()) })
	})
	b.Run("receive", func(b *testing.B) {
		s, q, _ := setup(b, b.N, false)
		measure(b, func(int) {
			if len(receive(b, s, q, base, base.Add(time.Hour), 1)) != 1 {
				b.Fatal("nothing received")
			}
		})
	})
	b.Run("delete", func(b *testing.B) {
		s, q, leased := setup(b, b.N, true)
		measure(b, func(n int) {
			m := leased[n]
			storetest.MustDelete(b, s, baton.MessageDeleteParams{QueueID: q, MessageID: m.ID, Epoch: m.Epoch, Now: base, RequireLive: true})
		})
	})
}
