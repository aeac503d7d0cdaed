package cli

import (
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// httpLogEvery is how often, at most, net/http's server logs a line of
// one kind (an accept that fails for want of file descriptors is retried
// every second for as long as it lasts; a port scanner fails TLS
// handshakes by the thousand).
const httpLogEvery = 10 * time.Second

// httpErrorLog is the server's log as net/http's ErrorLog: its lines
// reach the server's own log, in its format, at WARN, each kind at most
// once every httpLogEvery with the count of those it held back. A panic
// a handler raised is logged every time.
func httpErrorLog(l *slog.Logger, clk clock.Clock) *log.Logger {
	return log.New(&httpLogWriter{log: l, clock: clk, last: map[string]httpLogKind{}}, "", 0)
}

type httpLogWriter struct {
	log   *slog.Logger
	clock clock.Clock

	mu   sync.Mutex
	last map[string]httpLogKind
}

// httpLogKind is when a kind of line was last logged, and how many of it
// have been held back since.
type httpLogKind struct {
	at   time.Time
	held int
}

func (w *httpLogWriter) Write(p []byte) (int, error) {
	line := strings.TrimPrefix(strings.TrimSpace(string(p)), "http: ")
	if !strings.Contains(line, "panic") {
		held, ok := w.admit(httpLogKey(line))
		if !ok {
			return len(p), nil
		}
		if held > 0 {
			w.log.Warn("net/http: "+line, "like_it_held_back", held, "in", httpLogEvery)
			return len(p), nil
		}
	}
	w.log.Warn("net/http: " + line)
	return len(p), nil
}

// admit reports whether a line of kind key is logged now, and how many
// were held back before it.
func (w *httpLogWriter) admit(key string) (held int, ok bool) {
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	k, seen := w.last[key]
	if seen && now.Sub(k.at) < httpLogEvery {
		k.held++
		w.last[key] = k
		return 0, false
	}
	w.last[key] = httpLogKind{at: now}
	return k.held, true
}

// httpLogKey is the kind of one of net/http's lines: its words before the
// first colon ("Accept error", "TLS handshake error from 10.0.0.1"), at
// most 64 bytes.
func httpLogKey(line string) string {
	rest := line
	if i := strings.Index(rest, ":"); i >= 0 {
		rest = rest[:i]
	}
	if len(rest) > 64 {
		rest = rest[:64]
	}
	return rest
}
