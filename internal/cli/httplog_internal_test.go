package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// An accept failing every second for 30 s is three lines in the server's
// own format, the later ones counting those held back; another kind of
// line is not held back by it; a handler's panic is logged every time.
func TestHTTPErrorLogHoldsBackRepeats(t *testing.T) {
	var buf bytes.Buffer
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l := httpErrorLog(slog.New(slog.NewTextHandler(&buf, nil)), fake)
	for range 30 {
		l.Printf("http: Accept error: accept tcp 127.0.0.1:9324: accept4: too many open files; retrying in 1s")
		fake.Advance(time.Second)
	}
	l.Printf("http: TLS handshake error from 127.0.0.1:5555: EOF")
	l.Printf("http: panic serving 127.0.0.1:5556: boom")
	l.Printf("http: panic serving 127.0.0.1:5556: boom")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 3 accept errors, 1 handshake error and 2 panics:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{`level=WARN msg="net/http: Accept error`, "like_it_held_back=9", "like_it_held_back=9", "TLS handshake", "panic", "panic"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %s, want %s", i+1, lines[i], want)
		}
	}
}
