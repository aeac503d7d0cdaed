package consumer

import (
	"time"

	"github.com/baton-sqs/baton/clock"
)

// Clock is the runtime's only source of time. Every deadline, timer and
// backoff in the package reads it, so tests can drive the runtime on a fake
// clock (clock.Fake, which consumertest.NewClock returns) and never sleep
// through a lease. The runtime uses clock.System unless WithClock says
// otherwise.
type Clock = clock.Clock

// Timer is a one-shot timer of a Clock. The runtime stops every timer it no
// longer waits for.
type Timer = clock.Timer

// SystemClock is the machine's monotonic clock: the default Clock.
type SystemClock = clock.System

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
