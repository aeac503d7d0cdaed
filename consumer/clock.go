package consumer

import "time"

// Clock is the runtime's only source of time. Every deadline, timer and
// backoff in the package reads it, so tests can drive the runtime on a fake
// clock (consumertest.Clock) and never sleep through a lease. SystemClock is
// the only implementation that reads the machine's clock.
type Clock interface {
	// Now returns the current time. Times from the real clock carry a
	// monotonic reading, so lease arithmetic is immune to wall-clock steps.
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
	// pending. The runtime stops every timer it no longer waits for.
	Stop() bool
}

// SystemClock is the machine's monotonic clock: the default Clock.
type SystemClock struct{}

// Now returns time.Now(), which carries a monotonic reading.
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a timer backed by time.NewTimer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

// C delivers the time when the timer fires.
func (s systemTimer) C() <-chan time.Time { return s.t.C }

// Stop stops the timer.
func (s systemTimer) Stop() bool { return s.t.Stop() }

// sleep waits d on clock c, or until done is closed; it reports whether the
// full wait passed.
func sleep(c Clock, d time.Duration, done <-chan struct{}) bool {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-done:
		return false
	}
}
