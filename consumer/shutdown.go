package consumer

import (
	"context"
	"sync"
	"time"
)

// Report says what a Shutdown did. Its counts are exact.
type Report struct {
	// ReceivesAwaited is how many receive calls were in flight when the
	// stop was asked and were let finish (what they brought was released
	// once they had all ended, and counts in LateArrivals).
	ReceivesAwaited int
	// ReceivesCancelled is how many receive calls were in flight when the
	// stop was asked and had still not answered when Shutdown could wait
	// no longer (see Shutdown), and were cancelled. SQS may have leased
	// messages to them: those come back when their leases lapse.
	ReceivesCancelled int
	// ReleaseDelay is how long the shutdown's releases keep their messages
	// hidden because receives were cancelled: until their wait would have
	// ended, for the server may still lease to them what becomes visible
	// (SQS does). Zero when every receive answered: the messages are
	// visible again at once.
	ReleaseDelay time.Duration
	// LateArrivals is how many messages arrived after the stop was asked
	// (a receive that answered anyway) and were released, unhandled, once
	// the receives had ended.
	LateArrivals int
	// Drained is how many running attempts finished on their own during the
	// drain.
	Drained int
	// Cancelled is how many attempts were cancelled with ErrShutdown when
	// the drain ended.
	Cancelled int
	// Stuck is how many handlers had still not returned when Shutdown did;
	// their leases were released all the same.
	Stuck int
	// Released is how many leases were released because of the shutdown
	// (late arrivals, cancelled attempts, FIFO messages not yet started,
	// and every lease still held at the end). Shutdown releases are not
	// failures: the messages are visible again at once and no retry delay
	// applies (unless ReleaseDelay is not zero).
	Released int
	// ReleaseFailed is how many of those releases failed; those messages
	// come back when their leases lapse.
	ReleaseFailed int
	// DeletesFlushed is how many deletes were confirmed after the stop was
	// asked, including every delete still pending in the batcher.
	DeletesFlushed int
	// DeleteFailed is how many deletes failed after the stop was asked;
	// those messages will be delivered again.
	DeleteFailed int
	// Duration is how long the shutdown took on the runtime's clock.
	Duration time.Duration
	// Err is ctx's error if the deadline cut a phase short.
	Err error
}

// Shutdown stops the consumer in phases under ctx's one deadline:
//
//  1. stop receiving: start no receive, and let those in flight go on (a
//     receive abandoned by its caller may still lease messages on the
//     server, SQS's among them, which would then stay hidden for a whole
//     visibility timeout);
//  2. drain: let running handlers finish (those the runtime has abandoned
//     excepted), until all have or until WithShutdownReserve before ctx's
//     deadline;
//  3. cancel the remaining handlers with ErrShutdown and give them the
//     grace period (WithGrace) to return, ended early if need be to keep
//     the release time (half WithShutdownReserve, at most 2 s) before the
//     deadline;
//  4. wait for the receives in flight (a long poll lasts at most its
//     WithWaitTime, 20 s at most), cancelling those still waiting when only
//     the release time is left;
//  5. release every lease still held: the messages of the attempts
//     cancelled or stuck, those the receives brought after the stop, and
//     the releases the runtime asked for since the stop (a failure's retry,
//     with its delay). Until step 5 they are kept, and renewed: a message
//     released while receives are in flight is taken by them, and each
//     receive spends one of its maxReceiveCount. So a stop costs a message
//     at most the receive it was held under. If receives were cancelled in
//     step 4, the messages stay hidden until those receives' wait would
//     have ended (Report.ReleaseDelay);
//  6. flush every pending delete;
//  7. wait for the leases other owners were ending (an outcome, the
//     scheduler giving up on a stuck handler) to end;
//
// and returns a Report. Without a deadline on ctx, the whole shutdown is
// bounded by WithShutdownTimeout, as if ctx had that deadline. Leave the
// deadline room for the wait time: a receive that answers costs nothing,
// one cancelled delays the releases. Releases and deletes use what is left
// of the deadline even if ctx is cancelled earlier, retrying transient
// failures with backoff until it passes or the lease ends. The drain does
// not wait for handlers the runtime has already abandoned (stalled or
// overrun, and not returned within the grace); they count as Stuck.
// Calling Shutdown again waits for the first call and returns its report;
// on a consumer that never ran it returns at once.
func (c *Consumer) Shutdown(ctx context.Context) Report {
	c.mu.Lock()
	if r, ok := c.shutdownNotRunning(); ok {
		return r
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.shutdownTimeout)
		defer cancel()
	}
	final, cancelFinal := finalContext(ctx)
	defer cancelFinal()
	c.startParking()
	at := c.askStop(final) // unlocks c.mu
	var r Report

	// 1. Stop receiving; the receives in flight go on (step 4).
	c.recvStop()
	receiversDone := signalWhenDone(&c.receivers)

	// 2. Drain.
	dl, _ := ctx.Deadline()
	handlersDone := c.drain(ctx, dl)

	// Steps 3 and 4 end by then: what is left is for the releases.
	kept, cancelKept := context.WithDeadline(final, dl.Add(-c.cfg.releaseTime()))
	defer cancelKept()

	// 3. Cancel what is left, and give it the grace period.
	c.cancelRemaining(kept, &r, at.running, handlersDone)

	// 4. Wait for the receives in flight.
	c.awaitReceives(kept, receiversDone)

	// 5. Release every lease still held.
	r.ReleaseDelay = c.releaseStillHeld(final)

	// 6. Flush every pending delete.
	c.del.close(final)

	// 7. Wait for the leases others were ending.
	c.awaitEnding(final)

	c.bgCancel()
	c.loops.Wait()

	c.count(final, &r, at)
	c.logReport(r)
	c.mu.Lock()
	c.report = r
	c.state = stateStopped
	close(c.done)
	c.mu.Unlock()
	return r
}

// shutdownNotRunning answers a Shutdown of a consumer that is not running,
// with c.mu held: one that never started stops at once; one starting is
// told to stop and is waited for; a second Shutdown waits for the first
// and returns its report. Then (ok) c.mu is unlocked. For a running
// consumer it reports !ok and leaves c.mu locked, for Shutdown to go on.
func (c *Consumer) shutdownNotRunning() (r Report, ok bool) {
	switch c.state {
	case stateNew:
		c.state = stateStopped
		close(c.done)
		c.mu.Unlock()
		return Report{}, true
	case stateStarting:
		c.state = stateStopRequested
		c.mu.Unlock()
		<-c.done
		return Report{}, true
	case stateRunning:
		return Report{}, false
	default:
		c.mu.Unlock()
		<-c.done
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.report, true
	}
}

// stopMark is what Shutdown notes at the moment the stop is asked, for the
// Report to count from.
type stopMark struct {
	// running are the attempts running then: those that finish on their
	// own from then on (even while the receives stop) were drained.
	running                 []*attempt
	start                   time.Time
	deletes, deleteFailures int64
	inReceive               int
}

// askStop asks the stop and notes the stopMark, with c.mu held, which it
// unlocks. final is set with the state, under c.mu: a receive that answers
// after the stop releases what it got under final (see handOut).
func (c *Consumer) askStop(final context.Context) stopMark {
	c.final = final
	c.state = stateStopping
	close(c.stopAsked)
	at := stopMark{running: c.sched.running(), start: c.clock.Now()}
	at.deletes, at.deleteFailures = c.deletes.Load(), c.deleteFailures.Load()
	at.inReceive = int(c.inReceive.Load())
	c.mu.Unlock()
	return at
}

// signalWhenDone returns a channel closed once wg is done, for a select to
// wait on it beside a deadline.
func signalWhenDone(wg *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// drain is step 2: it waits for the running handlers to finish until all
// have, or until WithShutdownReserve before dl, ctx's deadline. The
// handlers the scheduler abandoned no longer count (see detach). It
// returns the channel closed when they have all finished, for step 3.
func (c *Consumer) drain(ctx context.Context, dl time.Time) <-chan struct{} {
	drain, cancelDrain := context.WithDeadline(ctx, dl.Add(-c.cfg.shutdownReserve))
	defer cancelDrain()
	handlersDone := signalWhenDone(&c.handlers)
	select {
	case <-handlersDone:
	case <-drain.Done():
	}
	return handlersDone
}

// cancelRemaining is step 3: it cancels with ErrShutdown the attempts still
// running, those running at the stop (the others of which count as
// drained) and those started after it (FIFO groups), and gives the
// cancelled the grace period (WithGrace) to return, within kept.
func (c *Consumer) cancelRemaining(kept context.Context, r *Report, atStop []*attempt, handlersDone <-chan struct{}) {
	now := c.clock.Now()
	for _, a := range atStop {
		if a.cancelWith(ErrShutdown, now) {
			r.Cancelled++
		} else if a.runtimeCause() == nil {
			r.Drained++
		}
	}
	for _, a := range c.sched.running() { // started after the stop (FIFO groups)
		if a.cancelWith(ErrShutdown, now) {
			r.Cancelled++
		}
	}
	if r.Cancelled > 0 {
		t := c.clock.NewTimer(c.cfg.grace)
		select {
		case <-handlersDone:
		case <-t.C():
		case <-kept.Done():
		}
		t.Stop()
	}
}

// awaitReceives is step 4: it waits for the receives in flight (what they
// bring is kept for step 5, see handOut), and cancels those still
// waiting when kept ends; it returns once all have returned.
func (c *Consumer) awaitReceives(kept context.Context, receiversDone <-chan struct{}) {
	select {
	case <-receiversDone:
	case <-kept.Done():
	}
	c.recvCancel()
	<-receiversDone
	c.shadowReceives()
}

// releaseStillHeld is step 5: it releases every lease still held that no
// one else is ending, the parked ones with the delay and reason they were
// given, the others with no delay; every delay lasts at least the shadow
// of cancelled receives, which it returns. From here on, operations waiting
// to retry go at once, and keep retrying with backoff while their leases
// and final last.
func (c *Consumer) releaseStillHeld(final context.Context) time.Duration {
	parked := c.stopParking()
	close(c.hurry)
	shadow := time.Duration(seconds(c.stopShadow(c.clock.Now()), MaxLease)) * time.Second
	var own []*Lease
	var delays []time.Duration
	var whys []Reason
	for _, l := range c.sched.held() {
		if !l.beginEnding() {
			continue
		}
		p, ok := parked[l]
		if !ok {
			p = parkedRelease{why: ReasonShutdown}
		}
		own, delays, whys = append(own, l), append(delays, p.delay), append(whys, p.why)
	}
	if len(own) == 0 {
		return 0
	}
	c.releaseEach(final, own, delays, whys)
	return shadow
}

// awaitEnding is step 7: it waits for the leases someone else was already
// ending when step 5 came: an outcome being carried out, a handler's
// Release, the scheduler releasing an abandoned attempt (whose grace may
// have ended at the same moment as ours). Their calls run on c.bg;
// cancelling it under them would strand their messages until the leases
// lapse.
func (c *Consumer) awaitEnding(final context.Context) {
	for _, l := range c.sched.held() {
		select {
		case <-l.ended:
		case <-final.Done():
		}
	}
}

// count fills in the Report's counts of what happened since the stop was
// asked (at), once every phase is over, and the deadline's error if final
// has ended.
func (c *Consumer) count(final context.Context, r *Report, at stopMark) {
	r.ReceivesCancelled = int(c.recvCancelled.Load())
	r.ReceivesAwaited = max(at.inReceive-r.ReceivesCancelled, 0)

	r.LateArrivals = int(c.lateArrivals.Load())
	r.Released = int(c.shutReleased.Load())
	r.ReleaseFailed = int(c.shutFailed.Load())
	r.DeletesFlushed = int(c.deletes.Load() - at.deletes)
	r.DeleteFailed = int(c.deleteFailures.Load() - at.deleteFailures)
	r.Stuck = int(c.active.Load())
	r.Duration = c.clock.Now().Sub(at.start)
	if err := final.Err(); err != nil {
		r.Err = err
	}
}

// finalContext is the context for the last phases: ctx's deadline (which
// it must have) without its cancellation.
func finalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, _ := ctx.Deadline()
	return context.WithDeadline(context.WithoutCancel(ctx), dl)
}
