package engine

import "testing"

func TestValidChars(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"plain ascii", true},
		{"tab\tnl\ncr\r", true},
		{"nul\x00", false},
		{"bell\x07", false},
		{"héllo ✓ 😀", true},
		{"\uFFFD", true},
		{"\xff", false},         // invalid UTF-8
		{"\xed\xa0\x80", false}, // an encoded surrogate
		{"\uFFFE", false},
		{"\U0010FFFF", true},
	}
	for _, tt := range tests {
		if got := validChars(tt.in); got != tt.want {
			t.Errorf("validChars(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestValidNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"0", true}, {"3", true}, {"-3.25", true}, {"+7", true}, {".5", true}, {"5.", true},
		{"1e10", true}, {"1.5E-3", true}, {"0.000", true},
		{"12345678901234567890123456789012345678", true},   // 38 digits
		{"123456789012345678901234567890123456789", false}, // 39 digits
		{"1e126", true}, {"1e127", false}, {"9.99e126", false}, {"1.0000e126", true}, {"1.0001e126", false},
		{"99e125", false}, {"9.9e125", true}, {"1e-128", true}, {"1e-129", false},
		{"", false}, {"abc", false}, {"1e", false}, {"--1", false}, {"1.2.3", false}, {" 1", false}, {"e5", false},
	}
	for _, tt := range tests {
		if got := validNumber(tt.in); got != tt.want {
			t.Errorf("validNumber(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
