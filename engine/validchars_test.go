package engine

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// validCharsReference is the rule of validChars written plainly, one rune
// at a time, for a faster validChars to be checked against.
func validCharsReference(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return false
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r':
			return false
		case r >= 0xD800 && r <= 0xDFFF || r == 0xFFFE || r == 0xFFFF:
			return false
		}
		i += size
	}
	return true
}

// validChars agrees with the plain rule on strings that put every kind of
// byte (control, ASCII, multi-byte, surrogate, invalid) at every offset.
func TestValidCharsMatchesReference(t *testing.T) {
	t.Parallel()
	pieces := []string{"a", "Z", " ", "~", "\x7f", "\t", "\n", "\r", "\x00", "\x1f", "é", "世", "😀", "\ufffd", "\uffff",
		"\xed\xa0\x80", "\xff", "\xc3", "\x80"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		var b []byte
		for n := rng.IntN(40); len(b) < n; {
			if rng.IntN(4) > 0 {
				b = append(b, "abcdefgh 0123456789"[rng.IntN(19)])
				continue
			}
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		s := string(b)
		if got, want := validChars(s), validCharsReference(s); got != want {
			t.Fatalf("validChars(%q) = %v, want %v", s, got, want)
		}
	}
}
