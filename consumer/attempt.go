package consumer

import (
	"context"
	"sync"
	"time"
)

// attempt is one run of a handler (or a batch handler) over one or more
// leases. The scheduler watches it for stalls and overruns; Delivery.Progress
// feeds it evidence of life.
type attempt struct {
	c      *Consumer
	ctx    context.Context
	cancel context.CancelCauseFunc
	start  time.Time
	ds     []*Delivery
	leases []*Lease
	// followers are leases waiting behind this attempt (later messages of
	// a FIFO group): released with it if it is abandoned.
	followers []*Lease
	batch     bool
	overrunAt time.Time
	// detach tells Shutdown's drain not to wait for the handler's unit of
	// work: called when the attempt is abandoned (see Consumer.unitDone).
	detach func()

	mu           sync.Mutex
	lastProgress time.Time
	progressed   bool // Progress, Extend or KeepAlive was called at least once
	// lastWork is the last Progress or Extend: the handler's own word that
	// it moved, which KeepAlive does not give.
	lastWork  time.Time
	cause     error
	graceEnd  time.Time
	done      bool
	abandoned bool
	lostCount int
	// slowNoted: EventNoProgress was reported.
	slowNoted bool
}

// newAttempt creates the attempt over the deliveries and binds their leases
// to it; it does not start watching it.
func (c *Consumer) newAttempt(ds []*Delivery, followers []*Lease, batch bool, detach func()) *attempt {
	now := c.clock.Now()
	ctx, cancel := context.WithCancelCause(c.bg)
	leases := leasesOf(ds)
	a := &attempt{c: c, ctx: ctx, cancel: cancel, start: now, ds: ds, leases: leases, followers: followers,
		batch: batch, detach: detach, lastProgress: now}
	if c.cfg.attemptTimeout > 0 {
		a.overrunAt = now.Add(c.cfg.attemptTimeout)
	}
	for _, l := range leases {
		// Cancel early enough that the grace period still fits under the
		// ceiling.
		last := l.ceiling.Add(-c.cfg.grace - c.cfg.renewAhead)
		if a.overrunAt.IsZero() || last.Before(a.overrunAt) {
			a.overrunAt = last
		}
		l.mu.Lock()
		l.att = a
		l.mu.Unlock()
	}
	return a
}

// progress records evidence of life: work when the handler itself said it
// moved (Progress, Extend), a heartbeat when it only asked to be kept
// alive (KeepAlive).
func (a *attempt) progress(now time.Time, work bool) {
	a.mu.Lock()
	first := !a.progressed
	a.progressed = true
	if now.After(a.lastProgress) {
		a.lastProgress = now
	}
	if work && now.After(a.lastWork) {
		a.lastWork = now
	}
	a.mu.Unlock()
	if first {
		// Past the auto-renew budget, the first progress makes leases
		// renewable again: the scheduler must look at them.
		a.c.sched.wake()
	}
}

// stallAtLocked is when the attempt counts as stalled: past both the
// auto-renew budget and the stall timeout since the last progress (or
// since the start, if there was none).
func (a *attempt) stallAtLocked() time.Time {
	cfg := a.c.cfg
	t := a.start.Add(cfg.autoRenew)
	if p := a.lastProgress.Add(cfg.stallTimeout); p.After(t) {
		t = p
	}
	return t
}

// allowsRenewal reports whether the attempt's leases may be extended at now:
// while it shows life (inside the auto-renew budget, or within the stall
// timeout of its last progress: the start alone is no evidence of life, so
// with a budget of 0 nothing is renewed before the first progress), during
// the grace after a cancel, and while the handler's result is being acted
// on.
func (a *attempt) allowsRenewal(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.abandoned:
		return false
	case a.done:
		return true
	case a.cause != nil:
		return now.Before(a.graceEnd)
	}
	cfg := a.c.cfg
	alive := now.Before(a.start.Add(cfg.autoRenew)) ||
		a.progressed && now.Before(a.lastProgress.Add(cfg.stallTimeout))
	return alive && now.Before(a.overrunAt)
}

// cancelWith cancels the attempt's context with cause, unless it is already
// cancelled or done, and starts the grace period. It reports whether it did.
func (a *attempt) cancelWith(cause error, now time.Time) bool {
	a.mu.Lock()
	if a.done || a.cause != nil {
		a.mu.Unlock()
		return false
	}
	a.cause = cause
	a.graceEnd = now.Add(a.c.cfg.grace)
	a.mu.Unlock()
	a.cancel(cause)
	a.c.sched.wake()
	return true
}

// leaseLost cancels the attempt with ErrLeaseLost once it has no lease left
// (a single handler at once; a batch when every item's lease is lost).
func (a *attempt) leaseLost() {
	a.mu.Lock()
	a.lostCount++
	all := !a.batch || a.lostCount >= len(a.leases)
	a.mu.Unlock()
	if all {
		a.cancelWith(ErrLeaseLost, a.c.clock.Now())
	}
}

// finish marks the handler as returned.
func (a *attempt) finish() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.done = true
}

// runtimeCause returns why the runtime cancelled the attempt, or nil.
func (a *attempt) runtimeCause() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cause
}

// noProgressFactor: an attempt that has run this many times the handlers'
// p99 with no progress while the auto-renew budget renews its leases is
// reported (EventNoProgress), for the budget alone keeps a hung handler's
// message hidden until it ends.
const noProgressFactor = 10

// checkNoProgress reports, once, an attempt that has run noProgressFactor
// times p99 (at least a second) without calling Progress while the
// auto-renew budget still renews its leases, if p99 is trusted. It returns
// when to look again (zero: no need).
func (a *attempt) checkNoProgress(now time.Time, p99 time.Duration, trusted bool) time.Time {
	cfg := a.c.cfg
	budgetEnd := a.start.Add(cfg.autoRenew)
	if !trusted || cfg.autoRenew <= 0 {
		return time.Time{}
	}
	a.mu.Lock()
	slowAt := a.start.Add(noProgressFactor * max(p99, time.Second))
	switch {
	case a.progressed || a.slowNoted || a.done || a.cause != nil || !slowAt.Before(budgetEnd) || !now.Before(budgetEnd):
		a.mu.Unlock()
		return time.Time{}
	case now.Before(slowAt):
		a.mu.Unlock()
		return slowAt
	}
	a.slowNoted = true
	a.mu.Unlock()
	l := a.leases[0]
	a.c.observe(Event{Kind: EventNoProgress, MessageID: l.messageID, Attempt: l.attemptNo, Duration: now.Sub(a.start),
		P99: p99, Renewals: l.Renewals(), Delay: budgetEnd.Sub(now)})
	return time.Time{}
}
