// Package lograte holds back log lines that may repeat many times a second
// (a request answered 503 during an outage, a health check failing, an
// accept that fails for want of file descriptors): the first line of a
// kind is written at once, then at most one every interval, which says
// how many of its kind were held back since the one before.
//
// A Paced writes the lines and says a burst's count once the interval
// after its kind's last line has passed, so that a burst that ends within
// an interval is not left unsaid until the next line of its kind; a
// Limiter alone only decides, and its held-back lines wait for that next
// line. Either way the caller writes the lines, in its own words.
package lograte

import (
	"sync"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// Limiter decides, for each kind of line, whether a line is written now.
// It is safe for concurrent use.
type Limiter struct {
	every time.Duration
	clock clock.Clock

	mu    sync.Mutex
	kinds map[string]kind
	// sweepAt is the number of kinds at which Admit next drops those it
	// has nothing left to say about (sweep).
	sweepAt int
}

// kind is when a kind of line was last written, and how many of it have
// been held back since.
type kind struct {
	at   time.Time
	held int
}

// minSweep is the fewest kinds a Limiter keeps before it sweeps.
const minSweep = 64

// New returns a Limiter that writes a line of each kind at most once every
// every, by clk's time.
func New(clk clock.Clock, every time.Duration) *Limiter {
	return &Limiter{every: every, clock: clk, kinds: map[string]kind{}, sweepAt: minSweep}
}

// Admit reports whether a line of kind key is written now (ok), and, when
// it is, how many lines of that kind were held back since the last one
// written (held). The first line of a kind, and the first after Forget,
// is written at once with held 0.
func (l *Limiter) Admit(key string) (held int, ok bool) {
	held, _, ok = l.AdmitSince(key)
	return held, ok
}

// AdmitSince is Admit, also saying when the last line of kind key was
// written (since; zero with held 0 for the first): the held-back lines
// came between then and now. That may be far longer ago than the
// interval, when the lines stopped for a while (an outage that ended) and
// came again: a line that counts them must not say they came within the
// interval.
func (l *Limiter) AdmitSince(key string) (held int, since time.Time, ok bool) {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k, seen := l.kinds[key]
	if seen && now.Sub(k.at) < l.every {
		k.held++
		l.kinds[key] = k
		return 0, time.Time{}, false
	}
	if !seen && len(l.kinds) >= l.sweepAt {
		l.sweep(now)
	}
	l.kinds[key] = kind{at: now}
	if k.held == 0 {
		return 0, time.Time{}, true
	}
	return k.held, k.at, true
}

// flush reports how many lines of kind key were held back since the last
// one written (held), and when that was (since); if any were, it counts
// the line that says so as written now (ok), so that the next line of the
// kind is held back for an interval after it and counts only those held
// back since. It does not wait for the interval: the caller calls it when
// the interval after the line written has passed, or when it stops.
func (l *Limiter) flush(key string) (held int, since time.Time, ok bool) {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k, seen := l.kinds[key]
	if !seen || k.held == 0 {
		return 0, time.Time{}, false
	}
	l.kinds[key] = kind{at: now}
	return k.held, k.at, true
}

// Forget makes the next line of kind key the first again: written at once,
// with nothing held back before it.
func (l *Limiter) Forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.kinds, key)
}

// sweep drops the kinds whose interval has passed with none held back: a
// line of such a kind is written at once with held 0, as a new kind's is,
// so forgetting them changes nothing but the memory kept (kinds may name
// a client's address). The next sweep comes once the kinds kept double.
func (l *Limiter) sweep(now time.Time) {
	for key, k := range l.kinds {
		if k.held == 0 && now.Sub(k.at) >= l.every {
			delete(l.kinds, key)
		}
	}
	l.sweepAt = max(minSweep, 2*len(l.kinds))
}
