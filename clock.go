package baton

import (
	"time"

	"github.com/baton-sqs/baton/clock"
)

// The clock lives in package clock, which every part of Baton uses; these
// names remain for code written against the root package.

// Clock is clock.Clock.
//
// Deprecated: use clock.Clock.
type Clock = clock.Clock

// Timer is clock.Timer.
//
// Deprecated: use clock.Timer.
type Timer = clock.Timer

// SystemClock is clock.System.
//
// Deprecated: use clock.System.
type SystemClock = clock.System

// FakeClock is clock.Fake.
//
// Deprecated: use clock.Fake.
type FakeClock = clock.Fake

// NewFakeClock returns clock.NewFake(t).
//
// Deprecated: use clock.NewFake.
func NewFakeClock(t time.Time) *FakeClock { return clock.NewFake(t) }
