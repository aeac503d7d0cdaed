package server

import (
	"log/slog"
	"sync"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// unavailableEvery is how often, at most, a request answered
// ServiceUnavailable is logged: during an outage of the store (a database
// failing over, a full disk) every request may be, and clients retry.
const unavailableEvery = 10 * time.Second

// unavailableLog logs the requests answered ServiceUnavailable: the first
// at once, then at most one every unavailableEvery, which counts those
// answered so since the last line. /metrics counts every one.
type unavailableLog struct {
	log   *slog.Logger
	clock clock.Clock

	mu     sync.Mutex
	logged time.Time // when the last line was written
	unsaid int       // requests answered 503 since, not logged
}

// note logs, or counts, a request answered ServiceUnavailable.
func (u *unavailableLog) note(reqID, action string, err error) {
	now := u.clock.Now()
	u.mu.Lock()
	if !u.logged.IsZero() && now.Sub(u.logged) < unavailableEvery {
		u.unsaid++
		u.mu.Unlock()
		return
	}
	unsaid := u.unsaid
	u.logged, u.unsaid = now, 0
	u.mu.Unlock()
	attrs := []any{"request_id", reqID, "action", action, "err", err}
	if unsaid > 0 {
		attrs = append(attrs, "more_answered_503", unsaid, "in", unavailableEvery)
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

	mu      sync.Mutex
	down    time.Time // since when checks have failed; zero while ready
	logged  time.Time // when the last line was written
	unsaid  int       // failed checks since, not logged
	lastErr error
}

// saw logs, or counts, the outcome of a health check: notReady nil when
// the server was ready.
func (r *readinessLog) saw(notReady error) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case notReady == nil && r.down.IsZero():
	case notReady == nil:
		r.log.Info("ready again", "not_ready_for", now.Sub(r.down).Round(time.Millisecond), "last_err", r.lastErr)
		r.down, r.unsaid, r.lastErr = time.Time{}, 0, nil
	case r.down.IsZero():
		r.log.Warn("not ready", "err", notReady)
		r.down, r.logged, r.lastErr = now, now, notReady
	case now.Sub(r.logged) < unavailableEvery:
		r.unsaid++
		r.lastErr = notReady
	default:
		r.log.Warn("still not ready", "err", notReady, "for", now.Sub(r.down).Round(time.Second), "checks_failed_unlogged", r.unsaid)
		r.logged, r.unsaid, r.lastErr = now, 0, notReady
	}
}
