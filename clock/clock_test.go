package clock_test

import (
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestFakeFiresInDeadlineOrder: timers fire when the clock reaches their
// deadline, not before, and Timers, NextDeadline and Unread follow.
func TestFakeFiresInDeadlineOrder(t *testing.T) {
	c := clock.NewFake(t0)
	late := c.NewTimer(2 * time.Second)
	early := c.NewTimer(time.Second)
	if n := c.Timers(); n != 2 {
		t.Fatalf("Timers() = %d, want 2", n)
	}
	if d, ok := c.NextDeadline(); !ok || !d.Equal(t0.Add(time.Second)) {
		t.Fatalf("NextDeadline() = %v, %v; want %v, true", d, ok, t0.Add(time.Second))
	}

	c.Advance(999 * time.Millisecond)
	if c.Unread() != 0 || c.Timers() != 2 {
		t.Fatalf("a timer fired before its deadline")
	}
	c.Advance(time.Millisecond)
	if got := c.Unread(); got != 1 {
		t.Fatalf("Unread() = %d after the first deadline, want 1", got)
	}
	if at := <-early.C(); !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("early fired at %v", at)
	}
	if got := c.Unread(); got != 0 {
		t.Fatalf("Unread() = %d once read, want 0", got)
	}

	c.Set(t0.Add(time.Hour))
	if at := <-late.C(); !at.Equal(t0.Add(time.Hour)) {
		t.Fatalf("late fired at %v, want the time Set moved to", at)
	}
	if _, ok := c.NextDeadline(); ok || c.Timers() != 0 {
		t.Fatalf("timers still pending after both fired")
	}
}

// TestFakeStop: a stopped timer never fires, Stop reports whether it was
// pending, and a fired but stopped timer is not counted as unread.
func TestFakeStop(t *testing.T) {
	c := clock.NewFake(t0)
	a := c.NewTimer(time.Second)
	if !a.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	if a.Stop() {
		t.Fatal("second Stop reported true")
	}
	c.Advance(time.Minute)
	select {
	case <-a.C():
		t.Fatal("a stopped timer fired")
	default:
	}

	b := c.NewTimer(time.Second)
	c.Advance(time.Second)
	if b.Stop() {
		t.Fatal("Stop of a fired timer reported true")
	}
	if got := c.Unread(); got != 0 {
		t.Fatalf("Unread() = %d for a fired timer that was stopped, want 0", got)
	}
}

// TestFakeImmediate: a timer of zero or negative duration fires at once.
func TestFakeImmediate(t *testing.T) {
	c := clock.NewFake(t0)
	for _, d := range []time.Duration{0, -time.Second} {
		tm := c.NewTimer(d)
		select {
		case at := <-tm.C():
			if !at.Equal(t0) {
				t.Fatalf("NewTimer(%v) fired at %v, want %v", d, at, t0)
			}
		default:
			t.Fatalf("NewTimer(%v) did not fire at once", d)
		}
	}
	if c.Timers() != 0 {
		t.Fatal("an immediate timer is pending")
	}
}

// TestSystem: the system clock's timers fire in real time.
func TestSystem(t *testing.T) {
	var c clock.Clock = clock.System{}
	start := c.Now()
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	if c.Now().Sub(start) < time.Millisecond {
		t.Fatal("the timer fired early")
	}
	if tm.Stop() {
		t.Fatal("Stop of a fired timer reported true")
	}
}
