package worker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func ptr[T any](v T) *T { return &v }

// TestEncodeRecord checks the record shape against Lambda's SQS event:
// lower-camel names, both list fields always present, binary values in
// base64, md5OfMessageAttributes only with attributes.
func TestEncodeRecord(t *testing.T) {
	t.Parallel()
	m := types.Message{
		MessageId: ptr("059f36b4"), ReceiptHandle: ptr("AQEB<h>&"), Body: ptr(`{"foo": 2} <b>`),
		MD5OfBody: ptr("e4e68fb7"), MD5OfMessageAttributes: ptr("ae7155c6"),
		Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1545082649183"},
		MessageAttributes: map[string]types.MessageAttributeValue{
			"Foo":  {DataType: ptr("String"), StringValue: ptr("Bar")},
			"Blob": {DataType: ptr("Binary"), BinaryValue: []byte{0xde, 0xad, 0xbe, 0xef}},
		},
	}
	b, err := encodeRecord(m, "arn:aws:sqs:eu-west-1:123456789012:jobs", "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messageId":"059f36b4","receiptHandle":"AQEB<h>&","body":"{\"foo\": 2} <b>",` +
		`"attributes":{"ApproximateReceiveCount":"1","SentTimestamp":"1545082649183"},` +
		`"messageAttributes":{"Blob":{"binaryValue":"3q2+7w==","stringListValues":[],"binaryListValues":[],"dataType":"Binary"},` +
		`"Foo":{"stringValue":"Bar","stringListValues":[],"binaryListValues":[],"dataType":"String"}},` +
		`"md5OfBody":"e4e68fb7","md5OfMessageAttributes":"ae7155c6","eventSource":"aws:sqs",` +
		`"eventSourceARN":"arn:aws:sqs:eu-west-1:123456789012:jobs","awsRegion":"eu-west-1"}`
	if string(b) != want {
		t.Errorf("record\n got %s\nwant %s", b, want)
	}

	bare, err := encodeRecord(types.Message{MessageId: ptr("x"), Body: ptr("")}, "arn", "r")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(bare), "md5OfMessageAttributes") {
		t.Errorf("a message without attributes has md5OfMessageAttributes: %s", bare)
	}
	if !strings.Contains(string(bare), `"attributes":{},"messageAttributes":{}`) {
		t.Errorf("empty maps not rendered as {}: %s", bare)
	}

	ev := encodeEvent([][]byte{b, bare})
	var parsed struct{ Records []map[string]any }
	if err := json.Unmarshal(ev, &parsed); err != nil || len(parsed.Records) != 2 {
		t.Fatalf("event %s: %v, %d records", ev, err, len(parsed.Records))
	}
	if len(ev) != eventOverhead+len(b)+1+len(bare) {
		t.Errorf("event size %d, want overhead + records + comma = %d", len(ev), eventOverhead+len(b)+1+len(bare))
	}
	if got := string(encodeEvent(nil)); got != `{"Records":[]}` {
		t.Errorf("empty event %s", got)
	}
}

func TestRegionOf(t *testing.T) {
	t.Parallel()
	for arn, want := range map[string]string{
		"arn:aws:sqs:us-east-2:123456789012:my-queue": "us-east-2",
		"arn:aws:sqs:eu-west-1:1:q.fifo":              "eu-west-1",
		"not an arn":                                  "",
		"arn:aws:sqs:x":                               "",
	} {
		if got := regionOf(arn); got != want {
			t.Errorf("regionOf(%q) = %q, want %q", arn, got, want)
		}
	}
}

// TestSplit checks that events stay within the payload cap and the batch
// size, and that a message too large on its own travels alone.
func TestSplit(t *testing.T) {
	t.Parallel()
	w := &Worker{cfg: Config{MaxPayload: 100, BatchSize: 3}}
	mk := func(sizes ...int) []*item {
		var out []*item
		for i, n := range sizes {
			out = append(out, &item{id: fmt.Sprint(i), rec: []byte(strings.Repeat("x", n))})
		}
		return out
	}
	sizesOf := func(parts [][]*item) string {
		var s []string
		for _, p := range parts {
			var ids []string
			for _, it := range p {
				ids = append(ids, it.id)
			}
			s = append(s, strings.Join(ids, ","))
		}
		return "[" + strings.Join(s, " | ") + "]"
	}
	tests := []struct {
		sizes []int
		want  string
	}{
		{[]int{10, 10, 10, 10}, "[0,1,2 | 3]"}, // batch size
		{[]int{40, 40, 40}, "[0,1 | 2]"},       // 14+40+1+40 = 95 fits; +41 does not
		{[]int{43, 42}, "[0,1]"},               // 14+43+1+42 = 100: exactly the cap
		{[]int{43, 43}, "[0 | 1]"},             // 101: over
		{[]int{200, 10, 300}, "[0 | 1 | 2]"},   // too large alone: alone
		{[]int{10, 200, 10}, "[0 | 1 | 2]"},    // never joined to a big one
		{nil, "[]"},
	}
	for _, tt := range tests {
		if got := sizesOf(w.split(mk(tt.sizes...))); got != tt.want {
			t.Errorf("split(%v) = %s, want %s", tt.sizes, got, tt.want)
		}
	}
}
