package server

import (
	"log/slog"
	"sync"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/lograte"
)

// unavailableEvery is how often, at most, a request answered
// ServiceUnavailable is logged: during an outage of the store (a database
// failing over, a full disk) every request may be, and clients retry.
const unavailableEvery = 10 * time.Second

// unavailableLog logs the requests answered ServiceUnavailable: the first
// at once, then at most one every unavailableEvery, which counts those
// answered so since the last line, and says when that was. /metrics counts every one.
type unavailableLog struct {
	log  *slog.Logger
	pace *lograte.Limiter
}

func newUnavailableLog(l *slog.Logger, clk clock.Clock) *unavailableLog {
	return &unavailableLog{log: l, pace: lograte.New(clk, unavailableEvery)}
}

// note logs, or counts, a request answered ServiceUnavailable.
func (u *unavailableLog) note(reqID, action string, err error) {
	unsaid, since, ok := u.pace.AdmitSince("")
	if !ok {
		return
	}
	attrs := []any{"request_id", reqID, "action", action, "err", err}
	if unsaid > 0 {
		// Since the line before, which may be long before this one's
		// interval: an outage that ended, and another.
		attrs = append(attrs, "more_answered_503", unsaid, "since", since.UTC().Format(time.RFC3339))
	}
	u.log.Warn("store unavailable", attrs...)
}

// readinessLog logs what health checks find: the first "not ready", then
// at most one line every unavailableEvery while it lasts (a load balancer
// or a test may ask many times a second), and one when the server is
// ready again.
type readinessLog struct {
	log   *slog.Logger
	clock clock.Clock
	pace  *lograte.Limiter // of the lines while not ready

	mu      sync.Mutex
	down    time.Time // since when checks have failed; zero while ready
	lastErr error
}

func newReadinessLog(l *slog.Logger, clk clock.Clock) *readinessLog {
	return &readinessLog{log: l, clock: clk, pace: lograte.New(clk, unavailableEvery)}
}

// saw logs, or counts, the outcome of a health check: notReady nil when
// the server was ready.
func (r *readinessLog) saw(notReady error) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case notReady == nil && r.down.IsZero():
		return
	case notReady == nil:
		r.log.Info("ready again", "not_ready_for", now.Sub(r.down).Round(time.Millisecond), "last_err", r.lastErr)
		r.down, r.lastErr = time.Time{}, nil
		r.pace.Forget("")
		return
	}
	r.lastErr = notReady
	unsaid, ok := r.pace.Admit("")
	switch {
	case !ok:
	case r.down.IsZero():
		r.log.Warn("not ready", "err", notReady)
		r.down = now
	default:
		r.log.Warn("still not ready", "err", notReady, "for", now.Sub(r.down).Round(time.Second), "checks_failed_unlogged", unsaid)
	}
}
