package consumer

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// config is the consumer's settings after options and defaults.
type config struct {
	concurrency        int
	receivers          int
	batchSize          int
	visibility         time.Duration
	visibilitySet      bool
	renewAhead         time.Duration
	autoRenew          time.Duration
	stallTimeout       time.Duration
	attemptTimeout     time.Duration
	grace              time.Duration
	waitTime           time.Duration
	waitTimeSet        bool
	retry              RetryPolicy
	snooze             RetryPolicy
	clock              Clock
	observer           Observer
	deleteWindow       time.Duration
	shutdownReserve    time.Duration
	shutdownTimeout    time.Duration
	snoozeByVisibility bool
	deadLetterURL      string
	middleware         []Middleware
	doctor             bool
	random             func() float64
	logger             *slog.Logger
	loggerSet          bool
}

func defaultConfig() config {
	return config{
		concurrency:     10,
		batchSize:       10,
		autoRenew:       5 * time.Minute,
		grace:           5 * time.Second,
		waitTime:        20 * time.Second,
		retry:           DefaultRetryPolicy(),
		snooze:          DefaultRetryPolicy(),
		clock:           clock.System{},
		shutdownReserve: 5 * time.Second,
		shutdownTimeout: 30 * time.Second,
		doctor:          true,
	}
}

// Option changes a consumer's settings; see the With… functions.
type Option func(*config)

// WithConcurrency sets the number of slots: how many messages (or batches,
// or FIFO groups) are worked on at once (default 10). Receives fetch only
// for free slots, so no message waits in a buffer while its lease runs.
func WithConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithReceivers sets how many receive loops run at once (default: one per
// ten slots).
func WithReceivers(n int) Option { return func(c *config) { c.receivers = n } }

// WithBatchSize sets how many messages a BatchHandler gets at most, 1–10
// (default 10).
func WithBatchSize(n int) Option { return func(c *config) { c.batchSize = n } }

// WithVisibilityTimeout sets the lease length asked for on every receive,
// and by renewals until enough handlers have finished to size them from
// their p99 (never shorter than this; see LeaseExtension). Default: the
// queue's VisibilityTimeout, read at start.
func WithVisibilityTimeout(d time.Duration) Option {
	return func(c *config) { c.visibility, c.visibilitySet = d, true }
}

// WithRenewAhead sets how long before its deadline a lease is renewed
// (default a third of the lease length).
func WithRenewAhead(d time.Duration) Option { return func(c *config) { c.renewAhead = d } }

// WithAutoRenew sets the auto-renew budget: how long after an attempt
// starts its lease is renewed without Progress (default 5 min; 0 = renew
// only on progress).
func WithAutoRenew(d time.Duration) Option {
	return func(c *config) { c.autoRenew = d }
}

// WithStallTimeout sets how long without Progress, once the auto-renew
// budget is spent, makes an attempt stalled (default: the lease length).
func WithStallTimeout(d time.Duration) Option { return func(c *config) { c.stallTimeout = d } }

// WithAttemptTimeout caps an attempt's duration, progress or not (default:
// none but the 12-hour lease ceiling).
func WithAttemptTimeout(d time.Duration) Option { return func(c *config) { c.attemptTimeout = d } }

// WithGrace sets how long a cancelled handler (stalled, overrun, shutdown)
// has to return before the runtime releases its lease itself and reports
// its slot as stuck (default 5 s). The lease is still renewed meanwhile.
func WithGrace(d time.Duration) Option { return func(c *config) { c.grace = d } }

// WithWaitTime sets the long-poll wait of each receive, 1–20 s. The default
// is 20 s or half the part of a lease before its renewal is due, whichever
// is shorter: leases count from when the receive was sent, so a message
// that arrives at the end of a long poll has already spent that much of its
// lease.
func WithWaitTime(d time.Duration) Option {
	return func(c *config) { c.waitTime, c.waitTimeSet = d, true }
}

// WithRetryPolicy sets the delays before failed messages come back.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *config) { c.retry = p } }

// WithSnoozePolicy sets the backoff of NotReady snoozes (default
// DefaultRetryPolicy: from 1 s doubling per delivery of the message to
// 15 min, full jitter, never under 1 s). A snooze lasts the handler's delay
// or the policy's, whichever is longer.
func WithSnoozePolicy(p RetryPolicy) Option { return func(c *config) { c.snooze = p } }

// WithClock sets the clock (default clock.System). Tests pass a fake.
func WithClock(clk Clock) Option { return func(c *config) { c.clock = clk } }

// WithObserver sets who is told about events; combine several with
// Observers.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// WithDeleteBatchWindow lets deletes wait up to d to share a
// DeleteMessageBatch call (default 0: sent at once). A pending delete is
// sent early if its lease nears its deadline, and Shutdown flushes them all.
// On a FIFO queue, the delete of a message whose group has more messages
// waiting from the same receive is sent at once: the next one runs only
// once it is confirmed.
func WithDeleteBatchWindow(d time.Duration) Option { return func(c *config) { c.deleteWindow = d } }

// WithShutdownReserve sets how much of Shutdown's deadline is kept after
// the drain (default 5 s): for the grace of cancelled handlers, the end of
// the receives in flight, and, whatever those take, the release time (see
// ReleaseTime) for releasing leases and flushing deletes.
func WithShutdownReserve(d time.Duration) Option { return func(c *config) { c.shutdownReserve = d } }

// ReleaseTime is the end of Shutdown's deadline kept for releasing leases
// and flushing deletes with a shutdown reserve of reserve (see
// WithShutdownReserve): half the reserve, at most 2 s. The grace of
// cancelled handlers and the wait for the receives in flight end before it.
func ReleaseTime(reserve time.Duration) time.Duration { return min(reserve/2, 2*time.Second) }

func (c *config) releaseTime() time.Duration { return ReleaseTime(c.shutdownReserve) }

// WithShutdownTimeout bounds the shutdown Run performs when its context is
// cancelled, and a Shutdown whose context has no deadline (default 30 s).
func WithShutdownTimeout(d time.Duration) Option { return func(c *config) { c.shutdownTimeout = d } }

// WithSnoozeByVisibility makes NotReady change the message's visibility
// instead of re-sending it. That keeps MessageId and order but spends a
// receive of the redrive budget.
func WithSnoozeByVisibility() Option { return func(c *config) { c.snoozeByVisibility = true } }

// WithDeadLetterQueue sets where Permanent sends messages (default: the
// queue's RedrivePolicy target).
func WithDeadLetterQueue(url string) Option { return func(c *config) { c.deadLetterURL = url } }

// WithMiddleware wraps the handler; the first middleware is outermost.
func WithMiddleware(mw ...Middleware) Option {
	return func(c *config) { c.middleware = append(c.middleware, mw...) }
}

// WithoutDoctor skips the start-up check (Run otherwise refuses to start
// when Doctor finds an error).
func WithoutDoctor() Option { return func(c *config) { c.doctor = false } }

// WithRandom sets the source of uniform numbers in [0, 1) for retry jitter
// (default math/rand/v2). It must be safe for concurrent use.
func WithRandom(f func() float64) Option { return func(c *config) { c.random = f } }

// validate checks settings that do not depend on the queue.
func (c *config) validate() error {
	switch {
	case c.concurrency < 1:
		return fmt.Errorf("consumer: concurrency %d: must be at least 1", c.concurrency)
	case c.batchSize < 1 || c.batchSize > maxBatch:
		return fmt.Errorf("consumer: batch size %d: must be 1 to 10", c.batchSize)
	case c.waitTime < time.Second || c.waitTime > 20*time.Second:
		return fmt.Errorf("consumer: wait time %v: must be 1 to 20 s (the runtime always long-polls)", c.waitTime)
	case c.visibilitySet && (c.visibility < time.Second || c.visibility > MaxLease):
		return fmt.Errorf("consumer: visibility timeout %v: must be 1 s to 12 h", c.visibility)
	case c.clock == nil:
		return fmt.Errorf("consumer: nil clock")
	}
	return nil
}

// settle fills the defaults that depend on the queue's lease length.
func (c *config) settle(queueVisibility time.Duration) {
	if !c.visibilitySet {
		c.visibility = queueVisibility
	}
	// SQS counts leases in whole seconds; so does the runtime.
	c.visibility = c.visibility.Truncate(time.Second)
	if c.visibility < time.Second {
		c.visibility = time.Second
	}
	if c.renewAhead <= 0 {
		c.renewAhead = c.visibility / 3
	}
	if c.stallTimeout <= 0 {
		c.stallTimeout = c.visibility
	}
	if c.receivers <= 0 {
		c.receivers = (c.concurrency + maxBatch - 1) / maxBatch
	}
	if !c.waitTimeSet {
		w := ((c.visibility - c.renewAhead) / 2).Truncate(time.Second)
		c.waitTime = max(min(w, 20*time.Second), time.Second)
	}
}
