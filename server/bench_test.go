package server_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// BenchmarkServeSendMessage is the server's whole handling of a JSON 1.0
// SendMessage of 1 KiB, from the parsed HTTP request to the written
// response: dispatch, codec, engine and memstore, but no network.
func BenchmarkServeSendMessage(b *testing.B) {
	eng, err := engine.New(engine.Config{Store: memstore.New()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(eng.Close)
	if _, err := eng.CreateQueue(context.Background(), engine.CreateQueueParams{Account: "000000000000", Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	h := server.New(server.Config{Engine: eng})
	body := []byte(`{"QueueUrl":"http://127.0.0.1:9324/000000000000/bench","MessageBody":"` + strings.Repeat("0123456789abcdef", 64) + `"}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/x-amz-json-1.0")
		r.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
