package consumer

import (
	"context"
	"log/slog"
	"time"
)

// WithLogger sets where the runtime logs what an operator must know: lost
// leases, late deletes, stalled, overrun and stuck handlers, failed calls
// (receives: once when they start failing, once when they succeed again),
// snoozes on a message's last receive, start-up warnings and the shutdown
// summary. Without this option the runtime logs to slog.Default() unless an
// observer is set (WithObserver), which then has the events instead. A nil
// logger turns logging off.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger, c.loggerSet = l, true }
}

// logger returns the logger the runtime writes to, or nil.
func (c *Consumer) logger() *slog.Logger {
	switch {
	case c.cfg.loggerSet:
		return c.cfg.logger
	case c.cfg.observer == nil:
		return slog.Default()
	}
	return nil
}

// queueAttr is the attribute naming e's queue, none if e names none.
func queueAttr(e Event) []slog.Attr {
	if e.Queue == "" {
		return nil
	}
	return []slog.Attr{slog.String("queue", e.Queue)}
}

// LogEvent logs e to l as the runtime logs its events when given a logger
// (WithLogger), if e is worth an operator's attention: for an Observer
// that passes events on and wants the runtime's lines too, in one set of
// words. Events of other kinds it leaves alone. An event with no Queue is
// logged without one (for a logger that names it already).
func LogEvent(l *slog.Logger, e Event) {
	level := slog.LevelWarn
	var msg string
	switch e.Kind {
	case EventLeaseLost:
		msg = "consumer: lease lost; the message may be delivered again while its handler runs"
	case EventLateDelete:
		msg = "consumer: handler succeeded after its lease was lost; deleted with the stale receipt"
		if e.Err != nil {
			msg, level = "consumer: handler succeeded after its lease was lost, and the late delete failed; the message will be delivered again", slog.LevelError
		}
	case EventStalled:
		msg = "consumer: handler stalled (no progress); cancelled with ErrStalled"
	case EventAttemptTimeout:
		msg = "consumer: handler overran its attempt timeout; cancelled with ErrAttemptTimeout"
	case EventSlotStuck:
		msg, level = "consumer: cancelled handler did not return within the grace; its message was released and its slot stays busy until it returns", slog.LevelError
	case EventDeleteFailed:
		msg, level = "consumer: delete failed; the message will be delivered again", slog.LevelError
	case EventError:
		if e.Op == "ReceiveMessage" {
			return // told when the receives start failing and when they recover
		}
		msg = "consumer: call failed"
	case EventReceivesFailing:
		msg = "consumer: receives failing: a receive got no answer or an error (err says which); they are retried with a backoff, and a line says when they succeed again"
	case EventReceivesRecovered:
		l.LogAttrs(context.Background(), slog.LevelInfo, "consumer: receives succeed again: the queue answers",
			append(queueAttr(e), slog.Int("failed_receives", e.Count),
				slog.Duration("failing_for", e.Duration.Round(100*time.Millisecond)))...)
		return
	case EventStartupFinding:
		l.LogAttrs(context.Background(), slog.LevelWarn, "consumer: start-up check: "+e.Finding.Message,
			append(queueAttr(e), slog.String("check", e.Finding.Check))...)
		return
	case EventLastReceiveSnooze:
		msg = "consumer: message snoozed on the last receive its queue's maxReceiveCount allows; the next receive moves it to the dead-letter queue"
	case EventNoProgress:
		msg = "consumer: handler has run ten times its p99 without progress; the auto-renew budget alone renews its lease, so a hung handler holds its message until the budget ends (call Delivery.Progress in long work)"
	case EventLeaseOutgrown:
		msg = "consumer: handler p99 exceeds the lease given at receive; messages depend on renewals, raise the queue's VisibilityTimeout"
	default:
		return
	}
	attrs := queueAttr(e)
	if e.MessageID != "" {
		attrs = append(attrs, slog.String("message_id", e.MessageID))
	}
	if e.Attempt > 0 {
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
	}
	if e.Op != "" {
		attrs = append(attrs, slog.String("op", e.Op))
	}
	if e.Duration > 0 {
		attrs = append(attrs, slog.Duration("duration", e.Duration))
	}
	if e.Visibility > 0 {
		attrs = append(attrs, slog.Duration("visibility", e.Visibility))
	}
	if e.Kind == EventNoProgress {
		attrs = append(attrs, slog.Duration("p99", e.P99), slog.Int("renewals", e.Renewals), slog.Duration("budget_left", e.Delay))
	} else if e.Delay > 0 {
		attrs = append(attrs, slog.Duration("delay", e.Delay))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("err", e.Err))
	}
	l.LogAttrs(context.Background(), level, msg, attrs...)
}

// reportFindings reports Doctor's warnings at start, as events
// (EventStartupFinding): logged, as the runtime logs its events, or told
// to the observer.
func (c *Consumer) reportFindings(fs []Finding) {
	for _, f := range fs {
		if f.Severity == SeverityWarning {
			c.observe(Event{Kind: EventStartupFinding, Finding: f})
		}
	}
}

// logReport logs the shutdown summary: at warning level if something was
// left for the leases to sort out.
func (c *Consumer) logReport(r Report) {
	l := c.logger()
	if l == nil {
		return
	}
	level := slog.LevelInfo
	if r.Err != nil || r.Stuck > 0 || r.ReleaseFailed > 0 || r.DeleteFailed > 0 || r.ReceivesCancelled > 0 {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.String("queue", queueName(c.url)),
		slog.Int("receives_awaited", r.ReceivesAwaited), slog.Int("receives_cancelled", r.ReceivesCancelled),
		slog.Int("late_arrivals", r.LateArrivals), slog.Int("drained", r.Drained), slog.Int("cancelled", r.Cancelled),
		slog.Int("stuck", r.Stuck), slog.Int("released", r.Released), slog.Int("release_failed", r.ReleaseFailed),
		slog.Int("deletes_flushed", r.DeletesFlushed), slog.Int("delete_failed", r.DeleteFailed),
		slog.Duration("duration", r.Duration)}
	if r.ReleaseDelay > 0 {
		// Why the released messages are not visible at once.
		attrs = append(attrs, slog.Duration("release_delay", r.ReleaseDelay),
			slog.String("why", "receives were cancelled: the server may lease to them until their wait ends"))
	}
	if r.Err != nil {
		attrs = append(attrs, slog.Any("err", r.Err))
	}
	l.LogAttrs(context.Background(), level, "consumer: shut down", attrs...)
}
