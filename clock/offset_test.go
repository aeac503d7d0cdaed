package clock_test

import (
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// TestOffset: Now reads the base clock plus the offset, which can change;
// timers keep the base clock's durations.
func TestOffset(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := clock.NewFake(start)
	c := clock.NewOffset(base)
	if got := c.Now(); !got.Equal(start) {
		t.Errorf("Now without offset = %v, want %v", got, start)
	}
	c.Set(-45 * time.Second)
	if got, want := c.Now(), start.Add(-45*time.Second); !got.Equal(want) {
		t.Errorf("Now = %v, want %v", got, want)
	}
	timer := c.NewTimer(10 * time.Second)
	base.Advance(10 * time.Second)
	select {
	case <-timer.C():
	default:
		t.Error("timer did not fire after its duration on the base clock")
	}
	if got, want := c.Now(), start.Add(-35*time.Second); !got.Equal(want) {
		t.Errorf("Now after Advance = %v, want %v", got, want)
	}
	if c.Get() != -45*time.Second {
		t.Errorf("Get = %v", c.Get())
	}
}
