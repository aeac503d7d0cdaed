package pebblestore_test

import (
	"strings"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// BenchmarkSendTen measures one MessageSend of ten 1 KiB messages, a
// SendMessageBatch's store call: one commit of ten rows. Relaxed
// durability leaves the disk's fsync latency out, so that cpu-ns/op (the
// process's CPU per call, the writer's included) shows the cost of writing
// the rows.
func BenchmarkSendTen(b *testing.B) {
	s, _ := openBench(pebblestore.DurabilityRelaxed)(b)
	q := storetest.NewQueue(storetest.QueueID(1), "bench")
	storetest.MustCreateQueue(b, s, q)
	body := strings.Repeat("b", 1024)
	msgs := make([]*baton.Message, 10)
	b.ReportAllocs()
	start := bench.ProcessCPU()
	for b.Loop() {
		for i := range msgs {
			msgs[i] = &baton.Message{ID: ids.NewUUID(), Body: body, SenderID: storetest.Account, SentAt: base, VisibleAt: base}
		}
		if _, err := s.MessageSend(b.Context(), baton.MessageSendParams{QueueID: q.ID, Messages: msgs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(bench.ProcessCPU()-start)/float64(b.N), "cpu-ns/op")
}
