package server

import (
	"sync"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// HTTP Basic authentication sends the secret itself, so unlike a SigV4
// signature it can be guessed at by trying. The guard caps the guesses at
// one key: after maxSignInFailures wrong secrets for an access key id within
// signInWindow, Basic sign-ins with that key id are refused unchecked, right
// secret or not, until the window that began with the first failure ends.
// It counts by key, not by client address, because a reverse proxy in front
// of the server would give every browser the same address; the number of
// keys it tracks is bounded by the keys configured, since unknown key ids
// are not counted. A successful sign-in does not clear the count, or a
// holder of one key could interleave sign-ins to keep guessing at another.
// SigV4 requests are not affected.
const (
	maxSignInFailures = 10
	signInWindow      = time.Minute
)

// signInGuard counts failed Basic sign-ins by access key id.
type signInGuard struct {
	clock clock.Clock
	mu    sync.Mutex
	keys  map[string]*signInFailures
}

// signInFailures is one key's failures in the window that began at since.
type signInFailures struct {
	since time.Time
	count int
}

func newSignInGuard(clock clock.Clock) *signInGuard {
	return &signInGuard{clock: clock, keys: make(map[string]*signInFailures)}
}

// refused reports whether sign-ins with keyID are refused now, and for how
// much longer.
func (g *signInGuard) refused(keyID string) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.keys[keyID]
	if f == nil || f.count < maxSignInFailures {
		return 0, false
	}
	left := f.since.Add(signInWindow).Sub(g.clock.Now())
	if left <= 0 {
		delete(g.keys, keyID)
		return 0, false
	}
	return left, true
}

// failed records a wrong secret for keyID, a key the server holds, and
// reports whether this failure used up the window's allowance.
func (g *signInGuard) failed(keyID string) (exhausted bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	f := g.keys[keyID]
	if f == nil || !now.Before(f.since.Add(signInWindow)) {
		f = &signInFailures{since: now}
		g.keys[keyID] = f
	}
	f.count++
	return f.count == maxSignInFailures
}
