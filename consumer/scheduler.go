package consumer

import (
	"context"
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

	mu       sync.Mutex
	leases   map[*Lease]struct{}
	attempts map[*attempt]struct{}

	calls sync.WaitGroup
}

func newScheduler(c *Consumer) *scheduler {
	return &scheduler{c: c, kick: make(chan struct{}, 1),
		leases: map[*Lease]struct{}{}, attempts: map[*attempt]struct{}{}}
}

// wake makes the loop look again now.
func (s *scheduler) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *scheduler) track(ls ...*Lease) {
	s.mu.Lock()
	for _, l := range ls {
		s.leases[l] = struct{}{}
	}
	s.mu.Unlock()
	s.wake()
}

func (s *scheduler) forget(l *Lease) {
	s.mu.Lock()
	delete(s.leases, l)
	s.mu.Unlock()
}

func (s *scheduler) watch(a *attempt) {
	s.mu.Lock()
	s.attempts[a] = struct{}{}
	s.mu.Unlock()
	s.wake()
}

func (s *scheduler) unwatch(a *attempt) {
	s.mu.Lock()
	delete(s.attempts, a)
	s.mu.Unlock()
}

// running returns the attempts being watched.
func (s *scheduler) running() []*attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*attempt, 0, len(s.attempts))
	for a := range s.attempts {
		out = append(out, a)
	}
	return out
}

// held returns the leases being tracked.
func (s *scheduler) held() []*Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Lease, 0, len(s.leases))
	for l := range s.leases {
		out = append(out, l)
	}
	return out
}

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
	c := s.c
	now := c.clock.Now()
	var next time.Time
	at := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}

	p99, trusted := c.durations.p99()
	for _, a := range s.running() {
		if t := a.checkNoProgress(now, p99, trusted); !t.IsZero() {
			at(t)
		}
		a.mu.Lock()
		if a.done || a.abandoned {
			a.mu.Unlock()
			continue
		}
		var cause error
		var kind EventKind
		if a.cause == nil {
			switch {
			case !now.Before(a.overrunAt):
				cause, kind = ErrAttemptTimeout, EventAttemptTimeout
			case !now.Before(a.stallAtLocked()):
				cause, kind = ErrStalled, EventStalled
			default:
				at(a.stallAtLocked())
				at(a.overrunAt)
			}
		}
		a.mu.Unlock()
		if cause != nil && a.cancelWith(cause, now) {
			c.observe(Event{Kind: kind, MessageID: a.leases[0].messageID, Attempt: a.leases[0].attemptNo,
				Duration: now.Sub(a.start)})
		}
		a.mu.Lock()
		abandon := a.cause != nil && !a.done && !a.abandoned && !now.Before(a.graceEnd)
		if abandon {
			a.abandoned = true
		} else if a.cause != nil && !a.done && !a.abandoned {
			at(a.graceEnd)
		}
		a.mu.Unlock()
		if abandon {
			s.unwatch(a)
			s.calls.Add(1)
			go func() {
				defer s.calls.Done()
				c.abandon(a)
			}()
		}
	}

	var due []*Lease
	for _, l := range s.held() {
		if !l.op.TryLock() {
			continue // an operation is in flight; it wakes us when done
		}
		l.mu.Lock()
		if l.state != leaseHeld {
			l.mu.Unlock()
			l.op.Unlock()
			continue
		}
		if !now.Before(l.deadline) {
			l.mu.Unlock()
			l.op.Unlock()
			c.loseLease(l, ErrLeaseLost)
			continue
		}
		renewable := !l.capped && (l.att == nil || l.att.allowsRenewal(now))
		when := l.deadline.Add(-c.cfg.renewAhead)
		if l.retryAt.After(when) {
			when = l.retryAt
		}
		at(l.deadline)
		if renewable && !now.Before(when) {
			l.mu.Unlock()
			due = append(due, l) // stays op-locked until its renewal is answered
			continue
		}
		if renewable {
			at(when)
		}
		l.mu.Unlock()
		l.op.Unlock()
	}
	for len(due) > 0 {
		n := min(len(due), maxBatch)
		batch := due[:n]
		due = due[n:]
		s.calls.Add(1)
		go func() {
			defer s.calls.Done()
			s.renew(ctx, batch)
		}()
	}
	return next
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
