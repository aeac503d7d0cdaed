package awsjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/protocol/wire"
)

// referenceEncode is what WriteResult wrote before the fast encoder, and
// still writes for everything else: encoding/json, HTML escaping off.
func referenceEncode(t *testing.T, out any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// fastOutputs are answers of every shape the fast encoder writes, built from
// the given strings.
func fastOutputs(a, b, c string, flag bool) []any {
	attrs := map[string]string{a: b, "SentTimestamp": c, b: a}
	return []any{
		&wire.SendMessageOutput{},
		&wire.SendMessageOutput{MD5OfMessageBody: a, MessageId: b, SequenceNumber: c},
		&wire.SendMessageOutput{MD5OfMessageBody: a, MD5OfMessageAttributes: b, MD5OfMessageSystemAttributes: c, MessageId: a},
		&wire.SendMessageBatchOutput{},
		&wire.SendMessageBatchOutput{
			Successful: []wire.SendMessageBatchResultEntry{{Id: a, MessageId: b, MD5OfMessageBody: c}, {MD5OfMessageAttributes: a, MD5OfMessageSystemAttributes: b, SequenceNumber: c}},
			Failed:     []wire.BatchResultErrorEntry{{Id: a, SenderFault: flag, Code: b, Message: c}, {}},
		},
		&wire.SendMessageBatchOutput{Failed: []wire.BatchResultErrorEntry{{Id: c, SenderFault: !flag, Code: a}}},
		&wire.SendMessageBatchOutput{Successful: []wire.SendMessageBatchResultEntry{}, Failed: []wire.BatchResultErrorEntry{}},
		&wire.DeleteMessageBatchOutput{},
		&wire.DeleteMessageBatchOutput{Successful: []wire.BatchResultEntry{{Id: a}, {Id: b}}, Failed: []wire.BatchResultErrorEntry{{Id: c, SenderFault: flag, Code: a, Message: b}}},
		&wire.ReceiveMessageOutput{},
		&wire.ReceiveMessageOutput{Messages: []wire.Message{}},
		&wire.ReceiveMessageOutput{Messages: []wire.Message{
			{MessageId: a, ReceiptHandle: b, MD5OfBody: c, Body: a + b + c},
			{Attributes: attrs, MD5OfMessageAttributes: a},
			{MessageId: c, Attributes: map[string]string{}, Body: b},
		}},
	}
}

// TestFastEncodeAsEncodingJSON checks the fast encoder against encoding/json
// on strings that need every kind of escape, and that it leaves a receive
// with message attributes, and other answers, to encoding/json.
func TestFastEncodeAsEncodingJSON(t *testing.T) {
	t.Parallel()
	strs := []string{"", "plain", "q\"b\\s/", "<a href='x'>&amp;</a>", "\x00\x01\b\f\n\r\t\x1f\x7f", "é✓😀", "\u2028\u2029 x\u2027",
		"bad\xffutf8\xc3", "\xed\xa0\x80 surrogate", strings.Repeat("0123456789abcdef", 64)}
	for _, a := range strs {
		for _, b := range strs {
			for _, out := range fastOutputs(a, b, "c"+a, len(a)%2 == 0) {
				got, ok := fastEncode(nil, out)
				if !ok {
					t.Fatalf("fastEncode(%#v) gave up", out)
				}
				if want := referenceEncode(t, out); string(got) != want {
					t.Fatalf("fastEncode(%#v)\n got %s\nwant %s", out, got, want)
				}
			}
		}
	}
	for _, out := range []any{
		&wire.ReceiveMessageOutput{Messages: []wire.Message{{}, {MessageAttributes: map[string]wire.MessageAttributeValue{"k": {DataType: "String", StringValue: "v"}}}}},
		&wire.GetQueueUrlOutput{QueueUrl: "u"},
		nil,
	} {
		if got, ok := fastEncode(nil, out); ok {
			t.Errorf("fastEncode(%#v) = %s, want it left to encoding/json", out, got)
		}
	}
}

// FuzzFastEncode holds the fast encoder to encoding/json's bytes on any
// strings.
func FuzzFastEncode(f *testing.F) {
	f.Add("a", "b\n", "\xff\u2028", true)
	f.Add(`"\`, "<>&", "\x00é", false)
	f.Fuzz(func(t *testing.T, a, b, c string, flag bool) {
		for _, out := range fastOutputs(a, b, c, flag) {
			got, ok := fastEncode(nil, out)
			if !ok {
				t.Fatalf("fastEncode(%#v) gave up", out)
			}
			if want := referenceEncode(t, out); string(got) != want {
				t.Fatalf("fastEncode(%#v)\n got %s\nwant %s", out, got, want)
			}
		}
	})
}

// TestPlain8 tries every byte at every place of eight plain ones, and of
// eight bytes that borrow across each other.
func TestPlain8(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"abcdefgh", "        ", "~~~~~~~~", "!!!!!!!!", "########", "]]]]]]]]"} {
		for pos := range 8 {
			for c := range 256 {
				s := []byte(base)
				s[pos] = byte(c)
				want := c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
				if got := plain8(string(s), 0); got != want {
					t.Errorf("plain8(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
}
