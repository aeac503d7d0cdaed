package engine_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/store/memstore"
)

// The engine's hot paths over the in-memory store: what a send, a receive
// and a delete cost apart from HTTP and JSON. Run with -benchmem (make
// bench) to see the allocations.

func benchEngine(b *testing.B) (*engine.Engine, engine.QueueRef) {
	b.Helper()
	e, err := engine.New(engine.Config{Store: memstore.New()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	ref := engine.QueueRef{Account: "000000000000", Name: "bench"}
	if _, err := e.CreateQueue(context.Background(), engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		b.Fatal(err)
	}
	return e, ref
}

var benchBody = strings.Repeat("0123456789abcdef", 64) // 1 KiB

func BenchmarkSendMessage(b *testing.B) {
	e, ref := benchEngine(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		if _, err := e.SendMessage(ctx, ref, engine.SendParams{Body: benchBody}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReceiveDeleteBatch is one round of the lifecycle: a batch of ten
// sent, received with MaxNumberOfMessages 10 and deleted by a batch.
func BenchmarkReceiveDeleteBatch(b *testing.B) {
	e, ref := benchEngine(b)
	ctx := context.Background()
	send := make([]engine.SendParams, 10)
	for i := range send {
		send[i] = engine.SendParams{ID: strconv.Itoa(i), Body: benchBody}
	}
	ten, zero := 10, 0
	recv := engine.ReceiveParams{MaxNumberOfMessages: &ten, WaitTimeSeconds: &zero}
	del := make([]engine.HandleEntry, 10)
	b.ReportAllocs()
	for b.Loop() {
		if _, failed, err := e.SendMessageBatch(ctx, ref, send); err != nil || len(failed) > 0 {
			b.Fatal(err, failed)
		}
		msgs, err := e.ReceiveMessage(ctx, ref, recv)
		if err != nil || len(msgs) != 10 {
			b.Fatalf("received %d messages: %v", len(msgs), err)
		}
		for i, m := range msgs {
			del[i] = engine.HandleEntry{ID: strconv.Itoa(i), ReceiptHandle: m.ReceiptHandle}
		}
		if ok, failed, err := e.DeleteMessageBatch(ctx, ref, del); err != nil || len(ok) != 10 {
			b.Fatal(err, failed)
		}
	}
}

func BenchmarkMD5OfBody(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		engine.MD5OfBody(benchBody)
	}
}

func BenchmarkMD5OfAttributes(b *testing.B) {
	attrs := map[string]baton.MessageAttribute{
		"ClientId": str("c-42"),
		"Retries":  {DataType: "Number.int", StringValue: "3"},
		"Blob":     {DataType: "Binary", BinaryValue: []byte{0xde, 0xad, 0xbe, 0xef}},
	}
	b.ReportAllocs()
	for b.Loop() {
		engine.MD5OfAttributes(attrs)
	}
}
