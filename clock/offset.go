package clock

import (
	"sync/atomic"
	"time"
)

// Offset is a Clock that reads another shifted by an offset that may
// change while it runs: a server sharing a database with others sets it to
// the difference between the database's clock and its own, so that every
// server stamps deadlines and send times on one time line. Timers run for
// their duration on the base clock; the offset moves only what Now reads.
type Offset struct {
	base   Clock
	offset atomic.Int64 // nanoseconds
}

// NewOffset returns an Offset clock over base, with no offset yet.
func NewOffset(base Clock) *Offset { return &Offset{base: base} }

// Now returns the base clock's time plus the offset.
func (c *Offset) Now() time.Time { return c.base.Now().Add(c.Get()) }

// NewTimer returns a timer of the base clock.
func (c *Offset) NewTimer(d time.Duration) Timer { return c.base.NewTimer(d) }

// Set makes d the offset.
func (c *Offset) Set(d time.Duration) { c.offset.Store(int64(d)) }

// Get returns the offset.
func (c *Offset) Get() time.Duration { return time.Duration(c.offset.Load()) }
