package consumer

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Severity grades a Doctor finding.
type Severity int

const (
	// SeverityInfo is worth knowing.
	SeverityInfo Severity = iota
	// SeverityWarning is a set-up that works but invites trouble.
	SeverityWarning
	// SeverityError is a set-up that cannot work; Run refuses to start.
	SeverityError
)

// String names the severity.
func (s Severity) String() string {
	switch s {
	case SeverityInfo:
		return "info"
	case SeverityWarning:
		return "warning"
	case SeverityError:
		return "error"
	}
	return "unknown"
}

// Finding is one thing Doctor noticed.
type Finding struct {
	// Severity grades the finding.
	Severity Severity
	// Check names the rule, e.g. "renew-ahead".
	Check string
	// Message says what is wrong and why it matters.
	Message string
}

// String renders the finding on one line.
func (f Finding) String() string { return fmt.Sprintf("%s: %s: %s", f.Severity, f.Check, f.Message) }

// DoctorError is returned by Run when Doctor found errors.
type DoctorError struct {
	// Findings are all the findings, not only the errors.
	Findings []Finding
}

// Error lists the findings of SeverityError.
func (e *DoctorError) Error() string {
	var b strings.Builder
	b.WriteString("consumer: refusing to start:")
	for _, f := range e.Findings {
		if f.Severity == SeverityError {
			b.WriteString(" ")
			b.WriteString(f.Check)
			b.WriteString(": ")
			b.WriteString(f.Message)
			b.WriteString(";")
		}
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Doctor reads the queue's attributes and checks the options against each
// other and against the queue, as Run does at start. It returns the findings
// (possibly none) and an error only if the queue could not be read or the
// options are invalid.
func Doctor(ctx context.Context, client Client, queueURL string, opts ...Option) ([]Finding, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	info, err := loadQueueInfo(ctx, client, queueURL)
	if err != nil {
		return nil, err
	}
	if cfg.deadLetterURL != "" {
		info.DeadLetterURL = cfg.deadLetterURL
	}
	cfg.settle(info.VisibilityTimeout)
	return diagnose(&cfg, info, false), nil
}

func hasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// diagnose checks settled settings against the queue.
func diagnose(cfg *config, q QueueInfo, batch bool) []Finding {
	var fs findings
	fs.lease(cfg, q)
	fs.timing(cfg)
	fs.queue(cfg, q, batch)
	return fs
}

// findings are what diagnose found so far.
type findings []Finding

func (fs *findings) add(s Severity, check, format string, args ...any) {
	*fs = append(*fs, Finding{Severity: s, Check: check, Message: fmt.Sprintf(format, args...)})
}

// lease checks the lease's length and its renewals.
func (fs *findings) lease(cfg *config, q QueueInfo) {
	add, vis := fs.add, cfg.visibility
	if cfg.renewAhead >= vis {
		add(SeverityError, "renew-ahead", "renew-ahead %v is not shorter than the lease length %v: every lease would be due for renewal at once", cfg.renewAhead, vis)
	} else if cfg.renewAhead < vis/10 {
		add(SeverityWarning, "renew-ahead", "renew-ahead %v is under a tenth of the lease length %v: one slow or throttled renewal loses the lease", cfg.renewAhead, vis)
	}
	if cfg.waitTime >= vis-cfg.renewAhead {
		add(SeverityWarning, "wait-time", "a long poll of %v can use up the %v before renewal is due: leases count from when the receive was sent, so messages that arrive late in a poll are due for renewal at once", cfg.waitTime, vis-cfg.renewAhead)
	}
	if vis >= time.Hour {
		add(SeverityWarning, "visibility", "leases of %v: if this consumer crashes or is killed without Shutdown, the messages it holds stay hidden that long; the runtime renews leases while handlers show life, so a lease sized from the handlers' p99 is enough", vis)
	}
	if vis < 2*time.Second {
		add(SeverityWarning, "visibility", "a lease of %v leaves almost no room for a renewal's round trip", vis)
	}
	if cfg.visibilitySet && q.VisibilityTimeout > 0 && vis != q.VisibilityTimeout {
		add(SeverityInfo, "visibility", "leases last %v (the queue's default is %v); the runtime asks for its own on every receive and renewal", vis, q.VisibilityTimeout)
	}
}

// timing checks the stall, attempt, shutdown and delete timings against
// the lease and each other.
func (fs *findings) timing(cfg *config) {
	add, vis := fs.add, cfg.visibility
	if cfg.stallTimeout < cfg.renewAhead {
		add(SeverityWarning, "stall-timeout", "stall timeout %v is shorter than renew-ahead %v: a handler reporting progress once per renewal can still be judged stalled", cfg.stallTimeout, cfg.renewAhead)
	}
	if cfg.autoRenew > MaxLease {
		add(SeverityWarning, "auto-renew", "auto-renew budget %v exceeds the 12 h lease ceiling; attempts are cancelled at the ceiling anyway", cfg.autoRenew)
	}
	if cfg.attemptTimeout > MaxLease {
		add(SeverityWarning, "attempt-timeout", "attempt timeout %v exceeds the 12 h lease ceiling; attempts are cancelled at the ceiling anyway", cfg.attemptTimeout)
	}
	if cfg.attemptTimeout > 0 && vis < 6*cfg.attemptTimeout {
		// AWS's guidance for Lambda functions reading SQS: "set the source
		// queue's visibility timeout to at least six times the timeout that
		// you configure on your function" (Lambda Developer Guide, Using
		// Lambda with Amazon SQS). It leaves room for retries of a
		// throttled or slow handler within one lease.
		add(SeverityWarning, "visibility", "the lease of %v is under six times the attempt timeout %v: a handler near its timeout lives on renewals alone", vis, cfg.attemptTimeout)
	}
	if cfg.attemptTimeout > 0 && cfg.attemptTimeout <= cfg.grace {
		add(SeverityWarning, "attempt-timeout", "attempt timeout %v is not longer than the grace %v", cfg.attemptTimeout, cfg.grace)
	}
	if cfg.shutdownReserve >= cfg.shutdownTimeout {
		add(SeverityWarning, "shutdown", "shutdown reserve %v is not shorter than the shutdown timeout %v: Run's shutdown would not drain at all", cfg.shutdownReserve, cfg.shutdownTimeout)
	}
	if w := cfg.shutdownTimeout - cfg.releaseTime(); w < cfg.waitTime {
		add(SeverityWarning, "shutdown", "Run's shutdown can wait %v for a receive in flight, less than the %v long poll: a poll cut off may lease messages no one gets until their leases lapse, and the released messages stay hidden until its wait would have ended", w, cfg.waitTime)
	}
	if cfg.deleteWindow >= vis-cfg.renewAhead && cfg.deleteWindow > 0 {
		add(SeverityWarning, "delete-window", "delete window %v is as long as a lease's safe part; deletes will mostly be flushed by deadline", cfg.deleteWindow)
	}
}

// queue checks the retry policy and batches against the queue's
// retention, RedrivePolicy and kind.
func (fs *findings) queue(cfg *config, q QueueInfo, batch bool) {
	add := fs.add
	retry := cfg.retry.withDefaults()
	if q.Retention > 0 && retry.Max >= q.Retention {
		add(SeverityWarning, "retry-policy", "retry delays reach %v but messages are kept only %v", retry.Max, q.Retention)
	}
	if retry.AllowZero && retry.Min == 0 {
		add(SeverityWarning, "retry-policy", "the retry policy allows zero delays: a failing message can be redelivered in a hot loop")
	}
	if q.MaxReceiveCount == 0 {
		add(SeverityWarning, "redrive", "the queue has no RedrivePolicy: failing messages retry until retention ends, and Permanent cannot dead-letter")
	} else {
		if q.MaxReceiveCount < 3 {
			add(SeverityWarning, "redrive", "maxReceiveCount %d leaves little room: lost leases, throttled deliveries and visibility snoozes all spend receives", q.MaxReceiveCount)
		}
		if q.DeadLetterURL == "" {
			add(SeverityWarning, "dead-letter", "the dead-letter queue %s could not be found: Permanent falls back to retries", q.DeadLetterARN)
		}
	}
	if q.FIFO && !cfg.snoozeByVisibility {
		add(SeverityInfo, "snooze", "on a FIFO queue NotReady changes visibility (re-sending would break the group's order), so snoozes spend receives")
	}
	if batch && q.FIFO && cfg.batchSize > maxBatch {
		add(SeverityError, "batch-size", "FIFO batches hold at most 10 messages")
	}
	if q.Retention > 0 && cfg.autoRenew > q.Retention {
		add(SeverityWarning, "auto-renew", "auto-renew budget %v is longer than the retention %v", cfg.autoRenew, q.Retention)
	}
}
