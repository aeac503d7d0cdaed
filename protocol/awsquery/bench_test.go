package awsquery_test

import (
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/protocol/awsquery"
	"github.com/baton-sqs/baton/protocol/protocoltest"
	"github.com/baton-sqs/baton/protocol/wire"
)

// The Query codec's cost per request apart from HTTP: a parsed form into
// the request struct, and the XML of a response (make bench reports
// allocations).

var benchBody = strings.Repeat("0123456789abcdef", 64) // 1 KiB

func BenchmarkDecodeSendMessageBatch(b *testing.B) {
	form := url.Values{"Action": {"SendMessageBatch"}, "QueueUrl": {"http://127.0.0.1:9324/000000000000/bench"}}
	for i := 1; i <= 10; i++ {
		p := "SendMessageBatchRequestEntry." + strconv.Itoa(i) + "."
		form.Set(p+"Id", strconv.Itoa(i))
		form.Set(p+"MessageBody", benchBody)
	}
	op := protocoltest.Table()["SendMessageBatch"]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := awsquery.Decode(form, op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteReceiveMessageResult(b *testing.B) {
	out := &wire.ReceiveMessageOutput{Messages: make([]wire.Message, 10)}
	for i := range out.Messages {
		out.Messages[i] = wire.Message{
			MessageId: "8f0c6a6e-2f4b-4c4e-9d3e-3b1e6f1d2a7c", ReceiptHandle: "AQAAAAAAAAAqjwxqbi9LTE6dPjseb8R0qfAAAAADAAABm3gbG0h6Y2Nb5NQmQxYv3ZxV0w",
			MD5OfBody: "9e107d9d372bb6826bd81d3542a419d6", Body: benchBody,
		}
	}
	op := protocoltest.Table()["ReceiveMessage"]
	b.ReportAllocs()
	for b.Loop() {
		awsquery.WriteResult(httptest.NewRecorder(), op, out, "00000000-0000-4000-8000-000000000000")
	}
}
