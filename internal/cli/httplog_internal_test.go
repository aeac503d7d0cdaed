package cli

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// An accept failing every second for 30 s is three lines in the server's
// own format, the later ones counting those held back, and a fourth once
// the interval after the last has passed, counting the burst's last nine
// (they used to wait for the next accept error, hours later or never);
// another kind of line is not held back by it; a handler's panic is
// logged every time.
func TestHTTPErrorLogHoldsBackRepeats(t *testing.T) {
	var buf logbuf.Buffer
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l, pace := httpErrorLog(slog.New(slog.NewTextHandler(&buf, nil)), fake)
	defer pace.Close()
	for range 30 {
		l.Printf("http: Accept error: accept tcp 127.0.0.1:9324: accept4: too many open files; retrying in 1s")
		fake.Advance(time.Second)
	}
	poll.For(t, 30*time.Second, func() error {
		if n := strings.Count(buf.String(), "\n"); n != 4 {
			return fmt.Errorf("%d lines, want the burst's 3 and its last count:\n%s", n, &buf)
		}
		return nil
	})
	l.Printf("http: TLS handshake error from 127.0.0.1:5555: EOF")
	l.Printf("http: panic serving 127.0.0.1:5556: boom")
	l.Printf("http: panic serving 127.0.0.1:5556: boom")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines, want 3 accept errors, the burst's last count, 1 handshake error and 2 panics:\n%s", len(lines), &buf)
	}
	for i, want := range []string{`level=WARN msg="net/http: Accept error`, "like_it_held_back=9", "like_it_held_back=9",
		`msg="net/http: Accept error: lines like it held back" like_it_held_back=9 since=2026-01-02T03:04:25Z`,
		"TLS handshake", "panic", "panic"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %s, want %s", i+1, lines[i], want)
		}
	}
}
