package engine

import (
	"strings"
	"testing"
	"time"
)

func BenchmarkValidChars(b *testing.B) {
	for _, tc := range []struct{ name, s string }{
		{"ascii-1KiB", strings.Repeat("The quick brown fox jumps over the lazy dog. ", 23)[:1024]},
		{"utf8-1KiB", strings.Repeat("Grüße, 世界! ", 64)[:1024]},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				if !validChars(tc.s) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

func BenchmarkReceiptEncode(b *testing.B) {
	c := newReceiptCodec([]byte("0123456789abcdef0123456789abcdef"))
	r := receipt{QueueID: 42, MessageID: "8f0c6a6e-2f4b-4c4e-9d3e-3b1e6f1d2a7c", Epoch: 3, LeasedAt: time.UnixMilli(1767323045000)}
	b.ReportAllocs()
	for b.Loop() {
		c.encode(r)
	}
}

func BenchmarkReceiptDecode(b *testing.B) {
	c := newReceiptCodec([]byte("0123456789abcdef0123456789abcdef"))
	h := c.encode(receipt{QueueID: 42, MessageID: "8f0c6a6e-2f4b-4c4e-9d3e-3b1e6f1d2a7c", Epoch: 3, LeasedAt: time.UnixMilli(1767323045000)})
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.decode(h); !ok {
			b.Fatal("rejected")
		}
	}
}
