package consumer

import (
	"context"
	"time"
)

// A stop must cost a message at most the receive it was held under. A
// message released while receives are still in flight is visible to them:
// each one that takes it spends one of its RedrivePolicy's maxReceiveCount,
// and is itself released, for the next one to take. So from the stop until
// the receives in flight have ended, the runtime's releases are parked: the
// lease is kept (and renewed like any other) and Shutdown releases it, with
// the delay and reason it was given, once no receive can take it back. A
// handler's own Lease.Release is not parked: it returns the release's
// result.
//
// A receive Shutdown had to cancel (it could wait no longer) may still lease
// what becomes visible on the server until its wait would have ended: SQS
// does not notice a caller gone from a long poll. Releases made after such a
// cancel are delayed at least until then (see stopShadow).

// parkedRelease is a release the runtime asked for while parking.
type parkedRelease struct {
	delay time.Duration
	why   Reason
}

// giveBack is the runtime's release of owned leases (see release): at once
// on ctx, or, while a Shutdown waits for its receives, parked.
func (c *Consumer) giveBack(ctx context.Context, ls []*Lease, delay time.Duration, why Reason) {
	delays := make([]time.Duration, len(ls))
	whys := make([]Reason, len(ls))
	for i := range ls {
		delays[i], whys[i] = delay, why
	}
	c.giveBackEach(ctx, ls, delays, whys)
}

// giveBackEach is giveBack with a delay and a reason per lease.
func (c *Consumer) giveBackEach(ctx context.Context, ls []*Lease, delays []time.Duration, whys []Reason) {
	c.parkMu.Lock()
	if !c.parking {
		c.parkMu.Unlock()
		c.releaseEach(ctx, ls, delays, whys)
		return
	}
	for i, l := range ls {
		l.keep()
		c.parked[l] = parkedRelease{delay: delays[i], why: whys[i]}
	}
	c.parkMu.Unlock()
	c.sched.track(ls...)
}

// startParking begins parking the runtime's releases (the stop was asked).
func (c *Consumer) startParking() {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	c.parking = true
	c.parked = map[*Lease]parkedRelease{}
}

// stopParking ends the parking (the receives have ended) and returns the
// releases parked.
func (c *Consumer) stopParking() map[*Lease]parkedRelease {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	c.parking = false
	p := c.parked
	c.parked = nil
	return p
}

// keep makes an owned (ending) lease held again, by no attempt: the
// scheduler renews it (a lease without an attempt needs no sign of life)
// until Shutdown releases it. Its renewals no longer renew what its
// attempt's work held with it (an idempotency claim, given up when the
// handler failed).
func (l *Lease) keep() {
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == leaseEnding {
		l.state = leaseHeld
	}
	l.att = nil
	l.hooks = nil
}

// shadowReceives notes, once Shutdown has cancelled receives that were
// still waiting, until when the server may still lease messages to them: a
// long poll sent at the latest at lastSent waits at most WithWaitTime from
// its arrival. A second covers the request's way there.
func (c *Consumer) shadowReceives() {
	if c.recvCancelled.Load() == 0 {
		return
	}
	sent := time.Unix(0, c.lastSent.Load())
	c.mu.Lock()
	c.shadow = sent.Add(c.cfg.waitTime + time.Second)
	c.mu.Unlock()
}

// stopShadow is how long a release made at now must keep its message
// hidden so that no cancelled receive can take it (see shadowReceives):
// zero unless Shutdown cancelled a receive.
func (c *Consumer) stopShadow(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shadow.IsZero() {
		return 0
	}
	return max(c.shadow.Sub(now), 0)
}
