package cli

import (
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// An accept failing every second for 30 s is a few lines in the server's
// own format, not thirty: the first at once, then at most one every
// httpLogEvery, each later line counting those held back before it, and
// the burst's last count said once its interval has passed (it used to
// wait for the next accept error, hours later or never), so that the
// lines account for all thirty. Another kind of line is not held back by
// it; a handler's panic is logged every time.
func TestHTTPErrorLogHoldsBackRepeats(t *testing.T) {
	var buf logbuf.Buffer
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l, pace := httpErrorLog(slog.New(slog.NewTextHandler(&buf, nil)), fake)
	defer pace.Close()
	for range 30 {
		l.Printf("http: Accept error: accept tcp 127.0.0.1:9324: accept4: too many open files; retrying in 1s")
		fake.Advance(time.Second)
	}
	// Whether a count comes in the next accept error's line or in a line
	// of its own at the interval's end depends on which runs first at the
	// same instant; either way every accept error is accounted for.
	held := regexp.MustCompile(`like_it_held_back=(\d+)`)
	var lines []string
	poll.For(t, 30*time.Second, func() error {
		lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
		accounted := 0
		for _, line := range lines {
			if strings.Contains(line, "too many open files") {
				accounted++
			}
			if m := held.FindStringSubmatch(line); m != nil {
				n, _ := strconv.Atoi(m[1])
				accounted += n
			}
		}
		if accounted != 30 {
			// The count's goroutine sets its timer by the clock it reads
			// then: should the loop have moved the clock on meanwhile,
			// the timer is due later than the interval's end.
			fake.Advance(httpLogEvery)
			return fmt.Errorf("the lines account for %d accept errors, want 30:\n%s", accounted, &buf)
		}
		return nil
	})
	if len(lines) > 6 || !strings.Contains(lines[0], `level=WARN msg="net/http: Accept error`) || strings.Contains(lines[0], "like_it_held_back") {
		t.Errorf("%d lines for 30 accept errors in 30 s, want the first at once and at most one more every 10 s, with the counts:\n%s", len(lines), &buf)
	}
	l.Printf("http: TLS handshake error from 127.0.0.1:5555: EOF")
	l.Printf("http: panic serving 127.0.0.1:5556: boom")
	l.Printf("http: panic serving 127.0.0.1:5556: boom")
	rest := strings.Split(strings.TrimSpace(buf.String()), "\n")[len(lines):]
	if len(rest) != 3 || !strings.Contains(rest[0], "TLS handshake") || !strings.Contains(rest[1], "panic") || !strings.Contains(rest[2], "panic") {
		t.Errorf("after the burst, %q; want the handshake error and both panics, at once", rest)
	}
}
