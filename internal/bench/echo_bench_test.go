package bench

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkEchoSend is the echo's cost of one SendMessage of 1 KiB, which
// the ceiling's figures rest on.
func BenchmarkEchoSend(b *testing.B) {
	e := NewEcho(1024)
	body := mustJSON(sendBody{QueueUrl: "http://127.0.0.1:1/000000000000/q", MessageBody: payload(1024)})
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		r.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
