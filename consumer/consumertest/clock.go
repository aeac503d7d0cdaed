package consumertest

import (
	"sort"
	"sync"
	"time"

	"github.com/baton-sqs/baton/consumer"
)

// Epoch is where NewClock(time.Time{}) starts.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Clock is a consumer.Clock that moves only when Advance or Set is called.
// Timers fire, in deadline order, when the clock reaches them.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
	fired  []*timer
}

var _ consumer.Clock = (*Clock)(nil)

// NewClock returns a clock reading t (Epoch if t is zero).
func NewClock(t time.Time) *Clock {
	if t.IsZero() {
		t = Epoch
	}
	return &Clock{now: t}
}

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the clock reaches Now()+d.
func (c *Clock) NewTimer(d time.Duration) consumer.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		c.fired = append(c.fired, t)
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock forward by d, firing the timers due.
func (c *Clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t, firing the timers due.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
	keep := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(t) {
			keep = append(keep, tm)
			continue
		}
		tm.ch <- t
		c.fired = append(c.fired, tm)
	}
	c.timers = keep
}

// Timers reports how many timers are pending.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NextDeadline returns the earliest pending timer's deadline, and false if
// none is pending.
func (c *Clock) NextDeadline() (time.Time, bool) {
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

// Unread reports how many timers have fired but not yet been read and not
// been stopped: goroutines that are about to wake. Tests wait for it to
// reach zero before moving the clock again.
func (c *Clock) Unread() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := c.fired[:0]
	for _, t := range c.fired {
		if len(t.ch) > 0 && !t.stopped {
			keep = append(keep, t)
		}
	}
	c.fired = keep
	return len(keep)
}

type timer struct {
	c       *Clock
	at      time.Time
	ch      chan time.Time
	stopped bool
}

// C delivers the fake time when the timer fires.
func (t *timer) C() <-chan time.Time { return t.ch }

// Stop cancels the timer; it reports whether it was pending.
func (t *timer) Stop() bool {
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
