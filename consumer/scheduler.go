package consumer

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// scheduler is the consumer's one renewal loop. It wakes at the earliest of:
// a lease reaching its renewal point (RenewAhead before the deadline), a
// lease reaching its deadline, an attempt reaching its stall or overrun time,
// a cancelled attempt reaching the end of its grace. It renews only the
// leases that are due and whose attempts show life, in
// ChangeMessageVisibilityBatch calls of at most ten, and reads every entry's
// result.
type scheduler struct {
	c    *Consumer
	kick chan struct{}

	leases   tracked[*Lease]
	attempts tracked[*attempt]

	calls sync.WaitGroup
}

func newScheduler(c *Consumer) *scheduler {
	return &scheduler{c: c, kick: make(chan struct{}, 1)}
}

// tracked is a set that callers change while the loop reads it; the zero
// value is empty and ready.
type tracked[K comparable] struct {
	mu sync.Mutex
	m  map[K]struct{}
}

func (t *tracked[K]) add(ks ...K) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[K]struct{}{}
	}
	for _, k := range ks {
		t.m[k] = struct{}{}
	}
}

func (t *tracked[K]) remove(k K) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, k)
}

// all returns the members, in no order.
func (t *tracked[K]) all() []K {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Collect(maps.Keys(t.m))
}

// wake makes the loop look again now.
func (s *scheduler) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *scheduler) track(ls ...*Lease) {
	s.leases.add(ls...)
	s.wake()
}

func (s *scheduler) forget(l *Lease) { s.leases.remove(l) }

func (s *scheduler) watch(a *attempt) {
	s.attempts.add(a)
	s.wake()
}

func (s *scheduler) unwatch(a *attempt) { s.attempts.remove(a) }

// running returns the attempts being watched.
func (s *scheduler) running() []*attempt { return s.attempts.all() }

// held returns the leases being tracked.
func (s *scheduler) held() []*Lease { return s.leases.all() }

// run loops until ctx ends, then waits for renewal calls in flight.
func (s *scheduler) run(ctx context.Context) {
	defer s.calls.Wait()
	for {
		next := s.step(ctx)
		var tc <-chan time.Time
		var t Timer
		if !next.IsZero() {
			t = s.c.clock.NewTimer(next.Sub(s.c.clock.Now()))
			tc = t.C()
		}
		select {
		case <-tc:
		case <-s.kick:
		case <-ctx.Done():
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// step does what is due now and returns when to look next (zero: nothing
// scheduled).
func (s *scheduler) step(ctx context.Context) time.Time {
	now := s.c.clock.Now()
	var next wakeup
	p99, trusted := s.c.durations.p99()
	for _, a := range s.running() {
		s.checkAttempt(a, now, p99, trusted, &next)
	}
	s.renewInBatches(ctx, s.dueLeases(now, &next))
	return next.t
}

// wakeup is the earliest time a step found it must look again.
type wakeup struct{ t time.Time }

// at makes the wakeup no later than t.
func (w *wakeup) at(t time.Time) {
	if w.t.IsZero() || t.Before(w.t) {
		w.t = t
	}
}

// checkAttempt acts on one watched attempt at now: it reports the attempt
// once if it has long run without progress, cancels it once it overruns or
// stalls, and abandons it once its grace after that cancel is over.
func (s *scheduler) checkAttempt(a *attempt, now time.Time, p99 time.Duration, trusted bool, next *wakeup) {
	if t := a.checkNoProgress(now, p99, trusted); !t.IsZero() {
		next.at(t)
	}
	if kind, cause := a.overdue(now, next); cause != nil && a.cancelWith(cause, now) {
		s.c.observe(Event{Kind: kind, MessageID: a.leases[0].messageID, Attempt: a.leases[0].attemptNo,
			Duration: now.Sub(a.start)})
	}
	if a.graceOver(now, next) {
		s.abandon(a)
	}
}

// overdue returns why the runtime must cancel a running attempt at now, and
// the kind of event that reports it: ErrAttemptTimeout once the attempt
// reaches its overrun time, else ErrStalled once it reaches its stall time.
// Until then it returns a nil cause and puts both times into next. An
// attempt that is done, abandoned or already cancelled is never overdue.
func (a *attempt) overdue(now time.Time, next *wakeup) (EventKind, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done || a.abandoned || a.cause != nil {
		return 0, nil
	}
	switch {
	case !now.Before(a.overrunAt):
		return EventAttemptTimeout, ErrAttemptTimeout
	case !now.Before(a.stallAtLocked()):
		return EventStalled, ErrStalled
	}
	next.at(a.stallAtLocked())
	next.at(a.overrunAt)
	return 0, nil
}

// graceOver reports whether an attempt the runtime cancelled has outlived
// its grace at now (its handler has not returned), and marks it abandoned if
// so; while the grace runs it puts the grace's end into next.
func (a *attempt) graceOver(now time.Time, next *wakeup) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cause == nil || a.done || a.abandoned {
		return false
	}
	if now.Before(a.graceEnd) {
		next.at(a.graceEnd)
		return false
	}
	a.abandoned = true
	return true
}

// abandon stops watching an abandoned attempt and releases its messages in
// the background.
func (s *scheduler) abandon(a *attempt) {
	s.unwatch(a)
	s.background(func() { s.c.abandon(a) })
}

// leaseAction is what a step does with one held lease.
type leaseAction int

const (
	leaseWait   leaseAction = iota // nothing now
	leaseRenew                     // its renewal is due
	leaseExpire                    // its deadline has passed: it is lost
)

// dueLeases returns the held leases whose renewal is due at now, each left
// op-locked until its renewal is answered. It gives up as lost the leases
// past their deadline, skips those with an operation in flight (that
// operation wakes the loop when done), and puts into next when each other
// lease needs a look.
func (s *scheduler) dueLeases(now time.Time, next *wakeup) []*Lease {
	var due []*Lease
	for _, l := range s.held() {
		if !l.op.TryLock() {
			continue // an operation is in flight; it wakes the loop when done
		}
		switch s.actionFor(l, now, next) {
		case leaseRenew:
			due = append(due, l) // stays op-locked until its renewal is answered
		case leaseExpire:
			l.op.Unlock()
			s.c.loseLease(l, ErrLeaseLost)
		default:
			l.op.Unlock()
		}
	}
	return due
}

// actionFor decides what is due at now for a lease: nothing if it is no
// longer held; expiry once its deadline has passed; else renewal once it is
// renewable (not capped, its attempt showing life) and at its renewal point.
// Unless the lease has expired, it puts into next the lease's deadline and,
// for a renewable lease not yet due, its renewal point.
func (s *scheduler) actionFor(l *Lease, now time.Time, next *wakeup) leaseAction {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != leaseHeld {
		return leaseWait
	}
	if !now.Before(l.deadline) {
		return leaseExpire
	}
	next.at(l.deadline)
	if l.capped || l.att != nil && !l.att.allowsRenewal(now) {
		return leaseWait
	}
	when := s.renewalPointLocked(l)
	if !now.Before(when) {
		return leaseRenew
	}
	next.at(when)
	return leaseWait
}

// renewalPointLocked is when a lease is next due for renewal: RenewAhead
// before its deadline, or after a failed renewal's retry time if that is
// later.
func (s *scheduler) renewalPointLocked(l *Lease) time.Time {
	when := l.deadline.Add(-s.c.cfg.renewAhead)
	if l.retryAt.After(when) {
		when = l.retryAt
	}
	return when
}

// renewInBatches sends the renewals of the due leases in calls of at most
// maxBatch, each in the background.
func (s *scheduler) renewInBatches(ctx context.Context, due []*Lease) {
	for len(due) > 0 {
		n := min(len(due), maxBatch)
		batch := due[:n]
		due = due[n:]
		s.background(func() { s.renew(ctx, batch) })
	}
}

// background runs f in a goroutine that run waits for before it returns.
func (s *scheduler) background(f func()) {
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		f()
	}()
}

// renew extends a batch of op-locked leases and unlocks them.
func (s *scheduler) renew(ctx context.Context, batch []*Lease) {
	c := s.c
	defer func() {
		for _, l := range batch {
			l.op.Unlock()
		}
		s.wake()
	}()
	sent := c.clock.Now()
	var ls []*Lease
	var secs []int32
	earliest := time.Time{}
	for _, l := range batch {
		n := l.extension(sent)
		if n < 1 {
			l.mu.Lock()
			l.capped = true
			l.mu.Unlock()
			continue
		}
		dl := l.Deadline()
		if earliest.IsZero() || dl.Before(earliest) {
			earliest = dl
		}
		ls = append(ls, l)
		secs = append(secs, n)
	}
	if len(ls) == 0 {
		return
	}
	bctx, cancel := c.boundCtx(ctx, earliest)
	defer cancel()
	for _, g := range byProgress(ls, secs, sent) {
		errs := c.changeVisibility(bctx, g.leases, g.secs, g.opts...)
		for i, l := range g.leases {
			_ = c.applyExtend(l, sent, g.secs[i], errs[i])
		}
	}
}
