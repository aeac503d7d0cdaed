package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/consumer"
)

// Limits and defaults of a mapping, Lambda's where Lambda has one.
const (
	// DefaultBatchSize is Lambda's default BatchSize.
	DefaultBatchSize = 10
	// MaxBatchSize is the largest batch on a standard queue.
	MaxBatchSize = 10000
	// MaxFIFOBatchSize is the largest batch on a FIFO queue.
	MaxFIFOBatchSize = 10
	// MaxBatchingWindow is the longest batching window.
	MaxBatchingWindow = 300 * time.Second
	// DefaultMaxPayload is Lambda's synchronous invocation payload limit,
	// 6 MB.
	DefaultMaxPayload = 6 << 20
	// DefaultMaxConcurrency is how many deliveries run at once by default:
	// the five batches a Lambda mapping starts with.
	DefaultMaxConcurrency = 5
	// MaxConcurrency is Lambda's MaximumConcurrency ceiling.
	MaxConcurrency = 1000
	// DefaultTargetTimeout bounds one delivery to the target by default.
	DefaultTargetTimeout = 30 * time.Second
	// DefaultKillGrace is how long a command has between SIGTERM and
	// SIGKILL by default.
	DefaultKillGrace = 5 * time.Second
	// DefaultShutdownTimeout bounds the shutdown Run performs when its
	// context ends.
	DefaultShutdownTimeout = 30 * time.Second
	// maxResponse bounds what is read of a target's answer: Lambda's
	// response payload limit.
	maxResponse = 6 << 20
)

// Config is one mapping: a queue, a target and how batches are formed.
// Zero fields take the defaults named on them.
type Config struct {
	// QueueURL is the queue to consume. Required.
	QueueURL string
	// Target receives the batches: an *HTTPTarget or a *CommandTarget.
	// Required.
	Target Target
	// BatchSize is the most messages one delivery carries: 1–10,000, at
	// most 10 on a FIFO queue (default 10). With HTTPTarget.PerMessage it
	// must be 0 or 1.
	BatchSize int
	// BatchingWindow is the longest a batch gathers messages, from its
	// first one, before it is delivered: 0–300 s (default 0: each receive
	// is delivered as it comes). At least 1 s when BatchSize is over 10;
	// not allowed on FIFO queues.
	BatchingWindow time.Duration
	// MaxPayload caps an event's size in bytes (default 6 MB). A message
	// too large for it on its own is delivered alone.
	MaxPayload int
	// MaxConcurrency is the most deliveries running at once, 1–1000
	// (default 5).
	MaxConcurrency int
	// TargetTimeout bounds one delivery: an HTTP request with its answer,
	// or a command's run (default 30 s; less than 12 h).
	TargetTimeout time.Duration
	// ReportBatchItemFailures makes the target's answer say which
	// messages failed, by Lambda's rules (see ParseBatchItemFailures).
	ReportBatchItemFailures bool
	// VisibilityTimeout is the lease asked for on every receive and
	// renewal (default: the queue's VisibilityTimeout).
	VisibilityTimeout time.Duration
	// Region fills the events' awsRegion (default: the region in the
	// queue's ARN).
	Region string
	// ShutdownTimeout bounds the shutdown Run performs when its context
	// ends (default 30 s). Its end is kept for releasing leases (a third,
	// at most 5 s) and, with a command target, for stopping commands
	// (twice KillGrace plus 1 s): running deliveries may finish in what is
	// left. Check warns when nothing is left.
	ShutdownTimeout time.Duration
	// Clock is the worker's only source of time (default
	// clock.System). Tests share a fake one with the server.
	Clock clock.Clock
	// Logger receives the worker's log (default: discarded), the consumer
	// runtime's lines among it: lost leases, stalled and stuck handlers,
	// failed calls, and when receives start failing and succeed again.
	Logger *slog.Logger
	// Observer is told the consumer runtime's events (receives, renewals,
	// releases, deletes…); consumer.Metrics is one.
	Observer consumer.Observer
	// Random returns uniform numbers in [0, 1) for the jitter of throttle
	// backoffs (default math/rand/v2). It must be safe for concurrent use.
	Random func() float64
	// ConsumerOptions are applied last to the consumer runtime underneath,
	// for settings this Config does not name (consumer.WithRetryPolicy,
	// consumer.WithShutdownReserve, …).
	ConsumerOptions []consumer.Option
}

// withDefaults returns c with zero fields filled, after checking what can
// be checked without the queue.
func (c Config) withDefaults() (Config, error) {
	if c.QueueURL == "" {
		return c, errors.New("worker: no queue URL")
	}
	if c.Target == nil {
		return c, errors.New("worker: no target (an *HTTPTarget or a *CommandTarget)")
	}
	if err := c.Target.check(); err != nil {
		return c, err
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
		if perMessage(c.Target) {
			c.BatchSize = 1
		}
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.MaxConcurrency == 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	if c.TargetTimeout == 0 {
		c.TargetTimeout = DefaultTargetTimeout
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Random == nil {
		c.Random = rand.Float64
	}
	switch {
	case c.BatchSize < 1 || c.BatchSize > MaxBatchSize:
		return c, fmt.Errorf("worker: batch size %d: must be 1 to %d", c.BatchSize, MaxBatchSize)
	case c.BatchingWindow < 0 || c.BatchingWindow > MaxBatchingWindow:
		return c, fmt.Errorf("worker: batching window %v: must be 0 to %v", c.BatchingWindow, MaxBatchingWindow)
	case c.BatchSize > 10 && c.BatchingWindow < time.Second:
		return c, fmt.Errorf("worker: batch size %d: a batch of more than 10 messages needs a batching window of at least 1s (it is gathered from several receives), as Lambda requires", c.BatchSize)
	case c.MaxPayload < 1:
		return c, fmt.Errorf("worker: max payload %d: must be positive", c.MaxPayload)
	case c.MaxConcurrency < 1 || c.MaxConcurrency > MaxConcurrency:
		return c, fmt.Errorf("worker: max concurrency %d: must be 1 to %d", c.MaxConcurrency, MaxConcurrency)
	case c.TargetTimeout < 0 || c.TargetTimeout >= consumer.MaxLease:
		return c, fmt.Errorf("worker: target timeout %v: must be positive and under %v", c.TargetTimeout, consumer.MaxLease)
	case c.VisibilityTimeout != 0 && (c.VisibilityTimeout < time.Second || c.VisibilityTimeout > consumer.MaxLease):
		return c, fmt.Errorf("worker: visibility timeout %v: must be 1s to 12h", c.VisibilityTimeout)
	case c.ShutdownTimeout < 0:
		return c, fmt.Errorf("worker: shutdown timeout %v: must be positive", c.ShutdownTimeout)
	}
	if perMessage(c.Target) {
		switch {
		case c.BatchSize != 1:
			return c, fmt.Errorf("worker: batch size %d: a per-message target gets one message per request", c.BatchSize)
		case c.BatchingWindow != 0:
			return c, errors.New("worker: a per-message target gets one message per request: no batching window")
		case c.ReportBatchItemFailures:
			return c, errors.New("worker: a per-message target answers for one message: its status is the result, there are no batch item failures to report")
		}
	}
	return c, nil
}

// releaseMargin is the end of a shutdown of length d kept for releasing
// leases and flushing deletes: a third of it, at most 5 s.
func releaseMargin(d time.Duration) time.Duration {
	return max(0, min(5*time.Second, d/3))
}

// shutdownReserve is the end of cfg's shutdown that the drain leaves: the
// release margin, and the time to stop a command.
func shutdownReserve(cfg Config) time.Duration {
	r := releaseMargin(cfg.ShutdownTimeout)
	if c, ok := cfg.Target.(*CommandTarget); ok {
		r += c.stopTime()
	}
	return r
}

// perMessage reports whether t delivers one message per request.
func perMessage(t Target) bool {
	h, ok := t.(*HTTPTarget)
	return ok && h.PerMessage
}
