package consumertest

import (
	"time"

	"github.com/baton-sqs/baton/clock"
)

// Epoch is where NewClock(time.Time{}) starts.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Clock is the fake clock, clock.Fake: it moves only when Advance or Set is
// called, and its timers fire, in deadline order, when it reaches them.
type Clock = clock.Fake

// NewClock returns a fake clock reading t (Epoch if t is zero).
func NewClock(t time.Time) *Clock {
	if t.IsZero() {
		t = Epoch
	}
	return clock.NewFake(t)
}
