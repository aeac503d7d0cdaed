package engine

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"sort"

	"github.com/baton-sqs/baton"
)

// MD5OfBody is the lowercase hex MD5 of the body's UTF-8 bytes.
func MD5OfBody(body string) string {
	// The body goes through a buffer on the stack: md5.Sum([]byte(body))
	// would copy every body (up to 1 MiB) to the heap, twice per message
	// (send and receive), only to hash it.
	d := md5.New()
	var buf [512]byte
	for len(body) > 0 {
		n := copy(buf[:], body)
		d.Write(buf[:n])
		body = body[n:]
	}
	var sum [md5.Size]byte
	return hex.EncodeToString(d.Sum(sum[:0]))
}

// MD5OfAttributes is SQS's digest of message attributes (docs/sqs-behaviour.md §4.3):
// for each attribute in byte order of name, the length-prefixed name, data
// type and value, with a transport byte (1 string, 2 binary) before the
// value. It is "" for no attributes, since SQS then omits the digest.
func MD5OfAttributes(attrs map[string]baton.MessageAttribute) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := md5.New()
	var lenBuf [4]byte
	put := func(b []byte) {
		binary.BigEndian.PutUint32(lenBuf[:], uint32(len(b)))
		h.Write(lenBuf[:])
		h.Write(b)
	}
	for _, n := range names {
		a := attrs[n]
		put([]byte(n))
		put([]byte(a.DataType))
		if a.IsBinary() {
			h.Write([]byte{2})
			put(a.BinaryValue)
		} else {
			h.Write([]byte{1})
			put([]byte(a.StringValue))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
