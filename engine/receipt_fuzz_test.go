package engine

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/ids"
)

var fuzzReceiptKey = []byte("receipt-fuzz-key-0123456789abcdef")

// fuzzReceipts are realistic receipts: real UUIDs, epochs and lease times.
var fuzzReceipts = []receipt{
	{QueueID: 1, MessageID: "0f8fad5b-d9cb-469f-a165-70867728950e", Epoch: 1, LeasedAt: time.UnixMilli(1767323045000)},
	{QueueID: 0xfedcba9876543211, MessageID: "7c9e6679-7425-40de-944b-e07fc1f90ae7", Epoch: 0xffffffff, LeasedAt: time.UnixMilli(0)},
	{QueueID: 42, MessageID: "00000000-0000-0000-0000-000000000000", Epoch: 0, LeasedAt: time.UnixMilli(-1)},
}

// FuzzReceiptDecode feeds random strings to the receipt decoder. It must
// never panic, and nothing but a handle the codec issued may decode: a
// string that decodes must be exactly the encoding of what it decodes to.
func FuzzReceiptDecode(f *testing.F) {
	c := receiptCodec{key: fuzzReceiptKey}
	for _, r := range fuzzReceipts {
		h := c.encode(r)
		f.Add(h)
		f.Add(h[:len(h)-1])
		f.Add(h + "A")
		f.Add(strings.ToUpper(h))
		f.Add(base64.URLEncoding.EncodeToString(mustDecodeHandle(f, h))) // padded
		f.Add(base64.StdEncoding.EncodeToString(mustDecodeHandle(f, h)))
		f.Add(receiptCodec{key: []byte("another key")}.encode(r))
	}
	f.Add("")
	f.Add("garbage")
	f.Add(strings.Repeat("A", 71))
	f.Add(strings.Repeat("_", 71))
	f.Add("AQAAAAAAAAE")
	f.Add(strings.Repeat("\n", 71))
	f.Fuzz(func(t *testing.T, s string) {
		r, ok := c.decode(s)
		if !ok {
			if r != (receipt{}) {
				t.Errorf("decode(%q) = %+v, false; want a zero receipt with false", s, r)
			}
			return
		}
		if got := c.encode(r); got != s {
			t.Fatalf("decode(%q) accepted a handle the codec would spell %q", s, got)
		}
		if _, ok := (receiptCodec{key: []byte("another key")}).decode(s); ok {
			t.Fatalf("decode(%q) accepted under another key", s)
		}
	})
}

// FuzzReceiptRoundTrip encodes receipts from random fields: every one must
// decode to itself, and any change to one character of the handle must be
// rejected.
func FuzzReceiptRoundTrip(f *testing.F) {
	for _, r := range fuzzReceipts {
		id, _ := ids.ParseUUID(r.MessageID)
		f.Add(r.QueueID, id[:], r.Epoch, r.LeasedAt.UnixMilli(), uint8(0), byte('x'))
	}
	f.Add(uint64(1), make([]byte, 16), uint32(7), int64(1<<62), uint8(70), byte('B'))
	c := receiptCodec{key: fuzzReceiptKey}
	f.Fuzz(func(t *testing.T, queueID uint64, rawID []byte, epoch uint32, leasedAt int64, pos uint8, repl byte) {
		var id [16]byte
		copy(id[:], rawID)
		in := receipt{QueueID: queueID, MessageID: ids.FormatUUID(id), Epoch: epoch, LeasedAt: time.UnixMilli(leasedAt)}
		h := c.encode(in)
		if len(h) > 1024 {
			t.Errorf("handle is %d characters; SQS allows at most 1024", len(h))
		}
		if strings.ContainsAny(h, "+/=") {
			t.Errorf("handle %q needs escaping in URLs or forms", h)
		}
		out, ok := c.decode(h)
		if !ok {
			t.Fatalf("decode(encode(%+v)) failed", in)
		}
		if out.QueueID != in.QueueID || out.MessageID != in.MessageID || out.Epoch != in.Epoch || !out.LeasedAt.Equal(in.LeasedAt) {
			t.Fatalf("decode(encode(%+v)) = %+v", in, out)
		}

		i := int(pos) % len(h)
		if h[i] == repl {
			return
		}
		mutated := h[:i] + string(repl) + h[i+1:]
		if r, ok := c.decode(mutated); ok {
			t.Fatalf("handle %q with character %d changed to %q decoded as %+v", h, i, repl, r)
		}
	})
}

func mustDecodeHandle(tb testing.TB, h string) []byte {
	tb.Helper()
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// A handle's last character carries two unused bits; spellings that differ
// only there were never issued and must be rejected.
func TestReceiptRejectsPaddingBitVariants(t *testing.T) {
	t.Parallel()
	c := receiptCodec{key: fuzzReceiptKey}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for _, r := range fuzzReceipts {
		h := c.encode(r)
		if _, ok := c.decode(h); !ok {
			t.Fatalf("decode(%q) failed for an issued handle", h)
		}
		last := strings.IndexByte(alphabet, h[len(h)-1])
		for bits := 1; bits < 4; bits++ {
			v := h[:len(h)-1] + string(alphabet[last^bits])
			if got, ok := c.decode(v); ok {
				t.Errorf("decode(%q), a variant of %q, = %+v, want rejected", v, h, got)
			}
		}
	}
}
