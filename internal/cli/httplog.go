package cli

import (
	"log"
	"log/slog"
	"strings"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/lograte"
)

// httpLogEvery is how often, at most, net/http's server logs a line of
// one kind (an accept that fails for want of file descriptors is retried
// every second for as long as it lasts; a port scanner fails TLS
// handshakes by the thousand).
const httpLogEvery = 10 * time.Second

// httpErrorLog is the server's log as net/http's ErrorLog: its lines
// reach the server's own log, in its format, at WARN, each kind at most
// once every httpLogEvery, the count of those held back said by the next
// line of the kind or once the interval has passed (lograte.Paced; Close
// says those due at once). A panic a handler raised is logged every time.
func httpErrorLog(l *slog.Logger, clk clock.Clock) (*log.Logger, *lograte.Paced) {
	pace := lograte.NewPaced(clk, httpLogEvery)
	return log.New(&httpLogWriter{log: l, pace: pace}, "", 0), pace
}

type httpLogWriter struct {
	log  *slog.Logger
	pace *lograte.Paced // by httpLogKey
}

func (w *httpLogWriter) Write(p []byte) (int, error) {
	line := strings.TrimPrefix(strings.TrimSpace(string(p)), "http: ")
	if strings.Contains(line, "panic") {
		w.log.Warn("net/http: " + line)
		return len(p), nil
	}
	key := httpLogKey(line)
	w.pace.Note(key, func(held int, since time.Time) {
		if held > 0 {
			w.log.Warn("net/http: "+line, heldBack(held, since)...)
			return
		}
		w.log.Warn("net/http: " + line)
	}, func(held int, since time.Time) {
		w.log.Warn("net/http: "+key+": lines like it held back", heldBack(held, since)...)
	})
	return len(p), nil
}

// heldBack are the attributes of a line that counts those of its kind
// held back since the one before, written at since.
func heldBack(held int, since time.Time) []any {
	return []any{"like_it_held_back", held, "since", since.UTC().Format(time.RFC3339)}
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
