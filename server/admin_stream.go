package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
)

// Live streams: GET /admin/api/events/<view> is a server-sent event stream
// of the view GET /admin/api/<view> answers. Each second the view is
// computed again and sent as a "data:" event when it differs from the last
// one sent; a failure (the queue was deleted, say) is sent as a "failure"
// event with {"error", "code"} and the stream goes on, so the page recovers
// when the queue comes back. A comment line goes out after 15 quiet seconds
// so that a client that went away is noticed.
//
// A stream is bounded: it ends when the client goes, when the engine closes
// (the server is shutting down), after streamMaxAge, when the browser's
// EventSource reconnects on its own, and when an event does not go out
// within answered.Patience (a tab that stopped reading without closing:
// the server bounds every write, ServeHTTP; so must whoever else serves
// LiveView, as the proxy does); at most maxStreams run at once, and more
// are refused with 503.

const (
	streamInterval  = time.Second
	streamKeepAlive = 15 * time.Second
	streamMaxAge    = 10 * time.Minute
	// streamRetryMillis is how long a browser waits before reconnecting.
	streamRetryMillis = 2000
	maxStreams        = 64
)

// streamLimiter counts the streams running.
type streamLimiter struct {
	mu      sync.Mutex
	running int
	max     int
}

func newStreamLimiter(n int) *streamLimiter { return &streamLimiter{max: n} }

func (l *streamLimiter) acquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running >= l.max {
		return false
	}
	l.running++
	return true
}

func (l *streamLimiter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running--
}

// streamView serves a view as a stream of server-sent events.
func (s *Server) streamView(view viewFunc, limit *streamLimiter) http.HandlerFunc {
	return liveView(view, limit, s.engine.Closing(), s.log)
}

// LiveView serves view as the server's live streams are served (one
// server-sent event each second the view changes, see above), at most 64
// at once, until closing closes. `baton proxy` serves its dashboard's views
// with it.
func LiveView(view func(*http.Request) (any, error), closing <-chan struct{}, log *slog.Logger) http.Handler {
	return liveView(view, newStreamLimiter(maxStreams), closing, log)
}

func liveView(view viewFunc, limit *streamLimiter, closing <-chan struct{}, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !limit.acquire() {
			w.Header().Set("Retry-After", "10")
			writeAdminError(w, http.StatusServiceUnavailable, "too many live streams; try again later")
			return
		}
		defer limit.release()
		rc := http.NewResponseController(w)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no") // tell a proxy in front not to hold events back
		w.WriteHeader(http.StatusOK)
		var buf bytes.Buffer
		send := func() bool {
			_, err := w.Write(buf.Bytes())
			if err == nil {
				err = rc.Flush()
			}
			return err == nil
		}
		buf.WriteString("retry: " + strconv.Itoa(streamRetryMillis) + "\n\n")
		if !send() {
			return
		}
		ticker := time.NewTicker(streamInterval)
		defer ticker.Stop()
		maxAge := time.NewTimer(streamMaxAge)
		defer maxAge.Stop()
		var last []byte
		quiet := time.Duration(0)
		for {
			event := viewEvent(r, view, log)
			buf.Reset()
			switch {
			case !bytes.Equal(event, last):
				buf.Write(event)
				last = event
				quiet = 0
			case quiet >= streamKeepAlive:
				buf.WriteString(": still here\n\n")
				quiet = 0
			}
			if buf.Len() > 0 && !send() {
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-closing:
				return
			case <-maxAge.C:
				return
			case <-ticker.C:
				quiet += streamInterval
			}
		}
	}
}

// viewEvent computes a view as one server-sent event.
func viewEvent(r *http.Request, view viewFunc, log *slog.Logger) []byte {
	var b bytes.Buffer
	v, err := view(r)
	if err != nil {
		e := baton.AsError(err)
		if e.Code == baton.ErrInternal {
			log.Error("admin stream failed", "path", r.URL.Path, "err", err)
		}
		v = map[string]string{"error": e.Message, "code": e.Code.Spec().QueryCode}
		b.WriteString("event: failure\n")
	}
	data, err := json.Marshal(v)
	if err != nil {
		log.Error("admin stream: encode", "path", r.URL.Path, "err", err)
		data = []byte(`{"error":"internal error","code":"InternalError"}`)
	}
	b.WriteString("data: ")
	b.Write(data) // compact JSON has no newline
	b.WriteString("\n\n")
	return b.Bytes()
}
