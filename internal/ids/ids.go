// Package ids makes and parses the random identifiers Baton hands out:
// message ids and request ids (version 4 UUIDs) and queue ids.
package ids

import (
	"crypto/rand"
	"encoding/binary"
)

// NewUUID returns a random (version 4) UUID in its 36-character form.
func NewUUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails: crypto/rand panics rather than return short
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return FormatUUID(b)
}

// NewUint64 returns a random non-zero 64-bit id.
func NewUint64() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:]) | 1
}

// FormatUUID renders 16 bytes as a lowercase UUID.
func FormatUUID(b [16]byte) string {
	const hexd = "0123456789abcdef"
	out := make([]byte, 36)
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j] = hexd[c>>4]
		out[j+1] = hexd[c&0xf]
		j += 2
	}
	return string(out)
}

// ParseUUID parses a lowercase 36-character UUID.
func ParseUUID(s string) (b [16]byte, ok bool) {
	if len(s) != 36 {
		return b, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return b, false
			}
			i++
			continue
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return b, false
		}
		b[j] = hi<<4 | lo
		j++
		i += 2
	}
	return b, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
