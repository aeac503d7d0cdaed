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
