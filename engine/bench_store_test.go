package engine_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// The receive and delete paths over the in-memory store and the durable
// default (the embedded store, full durability, in a temporary directory): there a
// figure includes the waits for fsync, so it says more about how many
// commits a path waits for than about CPU. cpu-ns/op is the process's CPU
// time (every goroutine, the store's writer too) per operation, which
// other programs on the machine disturb far less (BenchmarkLifecycle only:
// the others leave setup out of their timer, but not out of the CPU).
//
//	go test -run '^$' -bench 'Receive|Delete' -benchmem ./engine

// benchStores are the stores the path benchmarks run on.
var benchStores = []struct {
	name string
	open func(b *testing.B) baton.Store
}{
	{"memory", func(*testing.B) baton.Store { return memstore.New() }},
	{"embedded", func(b *testing.B) baton.Store {
		s, err := pebblestore.Open(b.Context(), b.TempDir(), pebblestore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
}

// benchEngineOn is an engine over s with one standard queue.
func benchEngineOn(b *testing.B, s baton.Store) (*engine.Engine, engine.QueueRef) {
	b.Helper()
	e, err := engine.New(engine.Config{Store: s})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		e.Close()
		s.Close()
	})
	ref := engine.QueueRef{Account: "000000000000", Name: "bench"}
	if _, err := e.CreateQueue(context.Background(), engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		b.Fatal(err)
	}
	return e, ref
}

// tenRound sends ten messages in a batch and receives them with
// MaxNumberOfMessages 10.
type tenRound struct {
	e    *engine.Engine
	ref  engine.QueueRef
	send []engine.SendParams
	recv engine.ReceiveParams
}

func newTenRound(e *engine.Engine, ref engine.QueueRef) *tenRound {
	r := &tenRound{e: e, ref: ref, send: make([]engine.SendParams, 10)}
	for i := range r.send {
		r.send[i] = engine.SendParams{ID: strconv.Itoa(i), Body: benchBody}
	}
	ten, zero := 10, 0
	r.recv = engine.ReceiveParams{MaxNumberOfMessages: &ten, WaitTimeSeconds: &zero}
	return r
}

func (r *tenRound) sendTen(b *testing.B) {
	if _, failed, err := r.e.SendMessageBatch(context.Background(), r.ref, r.send); err != nil || len(failed) > 0 {
		b.Fatal(err, failed)
	}
}

func (r *tenRound) receiveTen(b *testing.B) []engine.HandleEntry {
	msgs, err := r.e.ReceiveMessage(context.Background(), r.ref, r.recv)
	if err != nil || len(msgs) != 10 {
		b.Fatalf("received %d messages: %v", len(msgs), err)
	}
	del := make([]engine.HandleEntry, len(msgs))
	for i, m := range msgs {
		del[i] = engine.HandleEntry{ID: strconv.Itoa(i), ReceiptHandle: m.ReceiptHandle}
	}
	return del
}

func (r *tenRound) deleteTen(b *testing.B, del []engine.HandleEntry) {
	if ok, failed, err := r.e.DeleteMessageBatch(context.Background(), r.ref, del); err != nil || len(ok) != len(del) {
		b.Fatal(err, failed)
	}
}

// BenchmarkLifecycle is one round of `baton bench`'s lifecycle on each
// store: a batch of ten sent, received with MaxNumberOfMessages 10 and
// deleted by a batch.
func BenchmarkLifecycle(b *testing.B) {
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			r := newTenRound(benchEngineOn(b, st.open(b)))
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				r.sendTen(b)
				r.deleteTen(b, r.receiveTen(b))
			}
		})
	}
}

// BenchmarkReceiveTen times a receive of ten messages alone.
func BenchmarkReceiveTen(b *testing.B) {
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			r := newTenRound(benchEngineOn(b, st.open(b)))
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				r.sendTen(b)
				b.StartTimer()
				del := r.receiveTen(b)
				b.StopTimer()
				r.deleteTen(b, del)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkDeleteBatchTen times a DeleteMessageBatch of ten alone.
func BenchmarkDeleteBatchTen(b *testing.B) {
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			r := newTenRound(benchEngineOn(b, st.open(b)))
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				r.sendTen(b)
				del := r.receiveTen(b)
				b.StartTimer()
				r.deleteTen(b, del)
			}
		})
	}
}

// reportCPU starts counting the process's CPU time and returns the function
// that reports it per operation, to be deferred.
func reportCPU(b *testing.B) func() {
	start := bench.ProcessCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(bench.ProcessCPU()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// BenchmarkSendParallel is `baton bench`'s send scenario without HTTP: 32
// goroutines each sending 1 KiB messages one at a time, so that the durable
// store commits them in groups as it does under load.
func BenchmarkSendParallel(b *testing.B) {
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			e, ref := benchEngineOn(b, st.open(b))
			b.ReportAllocs()
			b.SetParallelism(16) // 32 goroutines on two cores
			defer reportCPU(b)()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := e.SendMessage(context.Background(), ref, engine.SendParams{Body: benchBody}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
