// Package clock is Baton's one source of time: the Clock interface that the
// engine, the server, the consumer runtime and the worker read, the System
// clock that production uses, and the Fake clock that tests move by hand so
// that no test sleeps through a lease (docs/architecture.md §2).
//
// The package imports nothing but the standard library, so every other
// package of Baton may use it.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock is a source of time. Stores never read one: the engine reads its
// clock and passes the time in.
type Clock interface {
	// Now returns the current time. Times from System carry a monotonic
	// reading, so lease arithmetic is immune to wall-clock steps.
	Now() time.Time
	// NewTimer returns a one-shot timer that fires once d has passed on this
	// clock. A timer with d <= 0 fires at once.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	// C delivers the time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing and reports whether it was still
	// pending.
	Stop() bool
}

// System is the machine's clock.
type System struct{}

// Now returns time.Now(), which carries a monotonic reading.
func (System) Now() time.Time { return time.Now() }

// NewTimer returns a timer backed by time.NewTimer.
func (System) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

// C delivers the time when the timer fires.
func (s systemTimer) C() <-chan time.Time { return s.t.C }

// Stop stops the timer.
func (s systemTimer) Stop() bool { return s.t.Stop() }

// Fake is a Clock that moves only when Advance or Set is called. Timers
// fire, in deadline order (timers with the same deadline in the order they
// were made), when the clock reaches their deadline.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// fired holds the timers that fired and may not have been read yet, for
	// Unread.
	fired []*fakeTimer
}

var _ Clock = (*Fake)(nil)

// NewFake returns a Fake reading t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the clock reaches Now()+d.
func (c *Fake) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		c.fired = append(c.pruneFired(), t)
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock forward by d and fires the timers that are due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(c.now.Add(d))
}

// Set moves the clock to t and fires the timers that are due.
func (c *Fake) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(t)
}

func (c *Fake) set(t time.Time) {
	c.now = t
	sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
	c.fired = c.pruneFired()
	keep := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(t) {
			keep = append(keep, tm)
			continue
		}
		tm.ch <- t
		c.fired = append(c.fired, tm)
	}
	clear(c.timers[len(keep):])
	c.timers = keep
}

// Timers reports how many timers are pending: tests use it to know that a
// long poll is waiting before they move the clock.
func (c *Fake) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NextDeadline returns the earliest pending timer's deadline, and false if
// no timer is pending.
func (c *Fake) NextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	for _, t := range c.timers {
		if first.IsZero() || t.at.Before(first) {
			first = t.at
		}
	}
	return first, len(c.timers) > 0
}

// Unread reports how many timers have fired but have been neither read nor
// stopped: goroutines that are about to wake. Tests wait for it to reach
// zero before they move the clock again.
func (c *Fake) Unread() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fired = c.pruneFired()
	return len(c.fired)
}

// pruneFired returns c.fired without the timers that were read or stopped.
// The caller holds c.mu.
func (c *Fake) pruneFired() []*fakeTimer {
	keep := c.fired[:0]
	for _, t := range c.fired {
		if len(t.ch) > 0 && !t.stopped {
			keep = append(keep, t)
		}
	}
	clear(c.fired[len(keep):])
	return keep
}

type fakeTimer struct {
	c       *Fake
	at      time.Time
	ch      chan time.Time
	stopped bool
}

// C delivers the fake time when the timer fires.
func (t *fakeTimer) C() <-chan time.Time { return t.ch }

// Stop cancels the timer; it reports whether it was pending.
func (t *fakeTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	t.stopped = true
	for i, tm := range c.timers {
		if tm == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return true
		}
	}
	return false
}
