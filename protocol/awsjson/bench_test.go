package awsjson_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/protocol/awsjson"
	"github.com/baton-sqs/baton/protocol/protocoltest"
	"github.com/baton-sqs/baton/protocol/wire"
)

// The codec's cost per request, apart from HTTP: decoding the hot actions'
// requests and encoding their responses (make bench reports allocations).

var benchBody = strings.Repeat("0123456789abcdef", 64) // 1 KiB

func benchDecode(b *testing.B, op, body string) {
	ops := protocoltest.Table()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := awsjson.Decode([]byte(body), ops[op]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSendMessage(b *testing.B) {
	benchDecode(b, "SendMessage", `{"QueueUrl":"http://127.0.0.1:9324/000000000000/bench","MessageBody":"`+benchBody+`"}`)
}

func BenchmarkDecodeSendMessageBatch(b *testing.B) {
	var s strings.Builder
	s.WriteString(`{"QueueUrl":"http://127.0.0.1:9324/000000000000/bench","Entries":[`)
	for i := range 10 {
		if i > 0 {
			s.WriteByte(',')
		}
		s.WriteString(`{"Id":"` + strconv.Itoa(i) + `","MessageBody":"` + benchBody + `"}`)
	}
	s.WriteString("]}")
	benchDecode(b, "SendMessageBatch", s.String())
}

func BenchmarkDecodeDeleteMessageBatch(b *testing.B) {
	var s strings.Builder
	s.WriteString(`{"QueueUrl":"http://127.0.0.1:9324/000000000000/bench","Entries":[`)
	for i := range 10 {
		if i > 0 {
			s.WriteByte(',')
		}
		s.WriteString(`{"Id":"` + strconv.Itoa(i) + `","ReceiptHandle":"AQAAAAAAAAAqjwxqbi9LTE6dPjseb8R0qfAAAAADAAABm3gbG0h6Y2Nb5NQmQxYv3ZxV0w"}`)
	}
	s.WriteString("]}")
	benchDecode(b, "DeleteMessageBatch", s.String())
}

func benchWrite(b *testing.B, out any) {
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	start := bench.ProcessCPU()
	for b.Loop() {
		clear(w.h)
		awsjson.WriteResult(w, out)
	}
	// CPU time varies less than wall time on a shared machine.
	b.ReportMetric(float64(bench.ProcessCPU()-start)/float64(b.N), "cpu-ns/op")
}

// discardWriter is a ResponseWriter that keeps nothing but its header map,
// so that the benchmarks time the encoding alone.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

func BenchmarkWriteSendMessageResult(b *testing.B) {
	benchWrite(b, &wire.SendMessageOutput{MessageId: "8f0c6a6e-2f4b-4c4e-9d3e-3b1e6f1d2a7c", MD5OfMessageBody: "9e107d9d372bb6826bd81d3542a419d6"})
}

func BenchmarkWriteReceiveMessageResult(b *testing.B) {
	out := &wire.ReceiveMessageOutput{Messages: make([]wire.Message, 10)}
	for i := range out.Messages {
		out.Messages[i] = wire.Message{
			MessageId: "8f0c6a6e-2f4b-4c4e-9d3e-3b1e6f1d2a7c", ReceiptHandle: "AQAAAAAAAAAqjwxqbi9LTE6dPjseb8R0qfAAAAADAAABm3gbG0h6Y2Nb5NQmQxYv3ZxV0w",
			MD5OfBody: "9e107d9d372bb6826bd81d3542a419d6", Body: benchBody,
		}
	}
	benchWrite(b, out)
}
