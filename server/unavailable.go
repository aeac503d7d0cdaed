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
// answered so since the last line, and says when that was; those of a
// burst that ends within the interval are counted once it has passed
// (lograte.Paced). /metrics counts every one.
type unavailableLog struct {
	log  *slog.Logger
	pace *lograte.Paced
}

func newUnavailableLog(l *slog.Logger, clk clock.Clock) *unavailableLog {
	return &unavailableLog{log: l, pace: lograte.NewPaced(clk, unavailableEvery)}
}

// note logs, or counts, a request answered ServiceUnavailable.
func (u *unavailableLog) note(reqID, action string, err error) {
	u.pace.Note("", func(unsaid int, since time.Time) {
		attrs := []any{"request_id", reqID, "action", action, "err", err}
		if unsaid > 0 {
			attrs = append(attrs, unsaidAttrs(unsaid, since)...)
		}
		u.log.Warn("store unavailable", attrs...)
	}, func(unsaid int, since time.Time) {
		u.log.Warn("store unavailable", unsaidAttrs(unsaid, since)...)
	})
}

// unsaidAttrs are the attributes of a line of unavailableLog that counts
// the requests answered 503 since the line before, written at since: it
// may be long before this line's interval (an outage that ended, and
// another).
func unsaidAttrs(unsaid int, since time.Time) []any {
	return []any{"more_answered_503", unsaid, "since", since.UTC().Format(time.RFC3339)}
}

// readinessLog logs what health checks find: the first "not ready", then
// at most one line every unavailableEvery while it lasts (a load balancer
// or a test may ask many times a second), with the count of the failed
// checks it did not log, which is said too once the interval has passed
// (lograte.Paced), and one line when the server is ready again.
type readinessLog struct {
	log   *slog.Logger
	clock clock.Clock
	pace  *lograte.Paced // of the lines while not ready

	mu      sync.Mutex
	down    time.Time // since when checks have failed; zero while ready
	lastAt  time.Time // when the last check failed
	lastErr error
}

func newReadinessLog(l *slog.Logger, clk clock.Clock) *readinessLog {
	return &readinessLog{log: l, clock: clk, pace: lograte.NewPaced(clk, unavailableEvery)}
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
		// The failed checks held back since the last line are counted
		// now, before the line that ends them, not dropped.
		r.pace.End("", r.failedBeforeReady)
		r.log.Info("ready again", "not_ready_for", now.Sub(r.down).Round(time.Millisecond), "last_err", r.lastErr)
		r.down, r.lastErr = time.Time{}, nil
		return
	}
	r.lastAt, r.lastErr = now, notReady
	r.pace.Note("", func(unsaid int, _ time.Time) {
		if r.down.IsZero() {
			r.log.Warn("not ready", "err", notReady)
			r.down = now
			return
		}
		r.log.Warn("still not ready", "err", notReady, "for", now.Sub(r.down).Round(time.Second), "checks_failed_unlogged", unsaid)
	}, r.sayUnlogged)
}

// sayUnlogged logs the count of the failed checks held back, once their
// interval has passed: not ready as of the last of them, and for how long
// by then. A check that found the server ready may have come in between
// (its line written already): then the line says only that they came
// before it.
func (r *readinessLog) sayUnlogged(unsaid int, _ time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down.IsZero() {
		r.log.Warn("health checks failed before the server was ready again", "checks_failed_unlogged", unsaid)
		return
	}
	r.log.Warn("still not ready", "err", r.lastErr, "for", r.lastAt.Sub(r.down).Round(time.Second),
		"checks_failed_unlogged", unsaid, "last_check", r.lastAt.UTC().Format(time.RFC3339))
}

// failedBeforeReady logs, as the server is ready again, the count of the
// failed checks held back since the last line, and the last one's
// finding: a line that reads as what came before, not as a failure now.
// r.mu is held.
func (r *readinessLog) failedBeforeReady(unsaid int, _ time.Time) {
	r.log.Warn("health checks failed before the server was ready again", "checks_failed_unlogged", unsaid,
		"last_err", r.lastErr, "last_check", r.lastAt.UTC().Format(time.RFC3339))
}
