package consumer

import (
	"context"
	"fmt"
	"sync"
	"time"
)

type leaseState int

const (
	// leaseHeld: the runtime keeps the lease alive (the scheduler may
	// extend it).
	leaseHeld leaseState = iota
	// leaseEnding: one owner (an outcome, a shutdown or the handler's
	// Release) is ending it; nothing extends it any more.
	leaseEnding
	// leaseEnded: deleted, released or lost.
	leaseEnded
)

// Lease is one delivery's hold on its message: a receipt handle with a
// deadline. It is owned by exactly one attempt. Extend, release and delete go
// through it strictly in order — an operation waits for the one in flight —
// and nothing extends it once it has begun to end.
//
// The deadline is counted on the runtime's clock from the moment the
// ReceiveMessage request was sent (the server's lease began later, so the
// runtime's view is never longer than the server's), and so is the 12-hour
// ceiling. The runtime, not the handler, decides when a lease is lost: when
// its deadline passes without a confirmed renewal, or when SQS answers that
// the receipt is gone.
type Lease struct {
	c          *Consumer
	messageID  string
	group      string // MessageGroupId
	handle     string
	epoch      int64
	attemptNo  int // the delivery's attempt number, for events and backoff
	sentAt     time.Time
	ceiling    time.Time
	visibility time.Duration
	lost       chan struct{}
	// ended is closed when the lease reaches leaseEnded (deleted,
	// released or lost): Shutdown waits on it for leases other owners are
	// ending.
	ended chan struct{}

	// op serialises SQS calls on this lease. The scheduler only TryLocks it
	// and skips a busy lease; owners Lock it.
	op opLock

	mu       sync.Mutex
	deadline time.Time
	state    leaseState
	lostErr  error
	capped   bool // no further extension is possible (ceiling)
	retryAt  time.Time
	renewals int
	// released: the handler gave the message back with Release, so its
	// return value does not mean the work is done.
	released bool
	att      *attempt
	hooks    []func(ctx context.Context, deadline time.Time)
}

func newLease(c *Consumer, messageID, handle string, epoch int64, attempt int, sentAt time.Time, vis time.Duration) *Lease {
	return &Lease{
		c: c, messageID: messageID, handle: handle, epoch: epoch, attemptNo: attempt,
		sentAt: sentAt, ceiling: sentAt.Add(MaxLease), visibility: vis,
		deadline: sentAt.Add(vis), lost: make(chan struct{}), ended: make(chan struct{}),
		op: make(opLock, 1),
	}
}

// opLock is a mutex made of a one-slot channel. An operation on a lease can
// wait on the network for long; a goroutine waiting for its turn is then
// blocked on a channel, which testing/synctest counts as durably blocked
// (a goroutine waiting for a sync.Mutex is not), so the package's tests can
// tell when the runtime has nothing left to do before moving their clock.
type opLock chan struct{}

func (o opLock) Lock()   { o <- struct{}{} }
func (o opLock) Unlock() { <-o }

func (o opLock) TryLock() bool {
	select {
	case o <- struct{}{}:
		return true
	default:
		return false
	}
}

// Deadline is when the lease ends unless renewed, on the runtime's clock.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Ceiling is the latest the lease can ever last: 12 hours after the receive
// was sent.
func (l *Lease) Ceiling() time.Time { return l.ceiling }

// Epoch is a fencing number for downstream writes: it grows with every
// delivery of the same message, re-sends for NotReady included (it is
// ApproximateReceiveCount plus the deliveries of the copies the runtime
// re-sent before this one, carried in AttrDeliveries; it equals the
// attempt number until the first snooze, and exceeds it after). A store
// that keeps the highest epoch it has accepted per message and rejects lower
// ones turns away writes from attempts whose lease was lost.
func (l *Lease) Epoch() int64 { return l.epoch }

// Renewals reports how many times the lease was extended.
func (l *Lease) Renewals() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewals
}

// Lost is closed when the runtime gives the lease up as lost. It is not
// closed when the lease ends normally (deleted or released).
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Extend asks for the lease to last d from now (clamped to the ceiling). It
// also counts as progress. It returns ErrInvalidExtension if d is not
// positive (to give the message back, use Release), ErrLeaseEnded once the
// lease has begun to end, ErrLeaseLost if it was lost (now or before),
// ErrAttemptTimeout wrapped if the ceiling leaves no room, or the SQS error
// if the renewal failed but the lease may still stand.
func (l *Lease) Extend(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: %v", ErrInvalidExtension, d)
	}
	c := l.c
	l.op.Lock()
	defer l.op.Unlock()
	now := c.clock.Now()
	l.mu.Lock()
	if l.state != leaseHeld {
		err := ErrLeaseEnded
		if l.lostErr != nil {
			err = ErrLeaseLost
		}
		l.mu.Unlock()
		return err
	}
	dl := l.deadline
	a := l.att
	l.mu.Unlock()
	if a != nil {
		a.progress(now, true)
	}
	if !now.Before(dl) {
		c.loseLease(l, fmt.Errorf("%w: deadline passed before Extend", ErrLeaseLost))
		return ErrLeaseLost
	}
	secs := seconds(d, l.ceiling.Sub(now).Truncate(time.Second))
	if secs < 1 { // d > 0, so only the ceiling leaves no room
		l.mu.Lock()
		l.capped = true
		l.mu.Unlock()
		return fmt.Errorf("%w: the lease is at its 12-hour ceiling", ErrAttemptTimeout)
	}
	bctx, cancel := c.boundCtx(ctx, dl)
	err := c.changeVisibility(bctx, []*Lease{l}, []int32{secs})[0]
	cancel()
	return c.applyExtend(l, now, secs, err)
}

// Release ends the lease early: the message becomes visible again after
// delay (0: at once). The handler's return value is then ignored (the
// Idempotency middleware does not record the work as done). It returns
// ErrLeaseEnded if the lease had already begun to end.
func (l *Lease) Release(ctx context.Context, delay time.Duration) error {
	if !l.beginEnding() {
		return ErrLeaseEnded
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	return l.c.release(ctx, []*Lease{l}, delay, ReasonHandler)[0]
}

// beginEnding makes the caller the lease's only owner: it waits for any
// operation in flight, and fails if the lease is no longer held.
func (l *Lease) beginEnding() bool {
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != leaseHeld {
		return false
	}
	l.state = leaseEnding
	return true
}

// held reports whether the runtime still keeps the lease alive.
func (l *Lease) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state == leaseHeld
}

// wasLost reports whether the lease ended by being lost.
func (l *Lease) wasLost() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr != nil
}

// releasedByHandler reports whether the handler gave the message back with
// Release.
func (l *Lease) releasedByHandler() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released
}

// attempt returns the attempt working on the lease, if any.
func (l *Lease) attempt() *attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.att
}

// onRenew registers a function run (in its own goroutine) after every
// successful renewal, with the new deadline: the idempotency middleware
// keeps its in-progress record alive with it.
func (l *Lease) onRenew(f func(ctx context.Context, deadline time.Time)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hooks = append(l.hooks, f)
}

// extension is how many seconds a renewal sent at now asks for: the span
// sized from the handlers' durations (see leaseSpan), within the ceiling.
func (l *Lease) extension(now time.Time) int32 {
	return seconds(l.c.leaseSpan(), l.ceiling.Sub(now).Truncate(time.Second))
}

// applyExtend records the answer to a renewal sent at sent for secs seconds.
// A renewal confirmed only after the old deadline proves nothing (the lease
// may have lapsed in between), so the lease is then lost.
func (c *Consumer) applyExtend(l *Lease, sent time.Time, secs int32, err error) error {
	got := c.clock.Now()
	l.mu.Lock()
	if l.state != leaseHeld {
		l.mu.Unlock()
		return ErrLeaseEnded
	}
	late := !got.Before(l.deadline)
	if err == nil && !late {
		l.deadline = sent.Add(time.Duration(secs) * time.Second)
		l.renewals++
		l.retryAt = time.Time{}
		n, dl, hooks := l.renewals, l.deadline, append([]func(context.Context, time.Time){}, l.hooks...)
		l.mu.Unlock()
		c.observe(Event{Kind: EventRenewed, MessageID: l.messageID, Attempt: l.attemptNo, Renewals: n, Delay: time.Duration(secs) * time.Second})
		for _, h := range hooks {
			go h(c.bg, dl)
		}
		c.sched.wake()
		return nil
	}
	kind := transient
	if err != nil {
		kind = classifyAny(err)
	}
	switch {
	case kind == gone:
		l.mu.Unlock()
		c.loseLease(l, fmt.Errorf("%w: %v", ErrLeaseLost, err))
		return ErrLeaseLost
	case late:
		l.mu.Unlock()
		why := "renewal confirmed after the deadline"
		if err != nil {
			why = err.Error()
		}
		c.loseLease(l, fmt.Errorf("%w: %s", ErrLeaseLost, why))
		return ErrLeaseLost
	case kind == ceiling:
		l.capped = true
	default:
		step := c.cfg.renewAhead / 4
		if step > time.Second {
			step = time.Second
		}
		l.retryAt = got.Add(step)
	}
	l.mu.Unlock()
	c.observe(Event{Kind: EventRenewFailed, MessageID: l.messageID, Attempt: l.attemptNo, Err: err})
	c.sched.wake()
	return err
}

// loseLease gives a held or ending lease up as lost: Lost is closed, the
// attempt is told, the scheduler forgets it.
func (c *Consumer) loseLease(l *Lease, why error) {
	l.mu.Lock()
	if l.state == leaseEnded {
		l.mu.Unlock()
		return
	}
	l.state = leaseEnded
	l.lostErr = why
	a := l.att
	close(l.lost)
	close(l.ended)
	l.mu.Unlock()
	c.sched.forget(l)
	c.observe(Event{Kind: EventLeaseLost, MessageID: l.messageID, Attempt: l.attemptNo, Err: why})
	if a != nil {
		a.leaseLost()
	}
}

// endLease marks an owned lease as ended normally.
func (c *Consumer) endLease(l *Lease) {
	l.mu.Lock()
	if l.state != leaseEnded {
		l.state = leaseEnded
		close(l.ended)
	}
	l.mu.Unlock()
	c.sched.forget(l)
}

// boundCtx returns a context that ends at until on the runtime's clock (or
// when parent ends): no call on a lease outlives the lease.
func (c *Consumer) boundCtx(parent context.Context, until time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	t := c.clock.NewTimer(until.Sub(c.clock.Now()))
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
