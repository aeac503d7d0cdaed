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
// once every httpLogEvery with the count of those it held back. A panic
// a handler raised is logged every time.
func httpErrorLog(l *slog.Logger, clk clock.Clock) *log.Logger {
	return log.New(&httpLogWriter{log: l, pace: lograte.New(clk, httpLogEvery)}, "", 0)
}

type httpLogWriter struct {
	log  *slog.Logger
	pace *lograte.Limiter // by httpLogKey
}

func (w *httpLogWriter) Write(p []byte) (int, error) {
	line := strings.TrimPrefix(strings.TrimSpace(string(p)), "http: ")
	if !strings.Contains(line, "panic") {
		held, since, ok := w.pace.AdmitSince(httpLogKey(line))
		if !ok {
			return len(p), nil
		}
		if held > 0 {
			w.log.Warn("net/http: "+line, "like_it_held_back", held, "since", since.UTC().Format(time.RFC3339))
			return len(p), nil
		}
	}
	w.log.Warn("net/http: " + line)
	return len(p), nil
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
