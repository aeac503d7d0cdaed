package worker

import (
	"time"

	"github.com/baton-sqs/baton/consumer"
)

// logEvents logs the consumer runtime's events that call for attention to
// the worker's log, then tells next (Config.Observer, may be nil). The
// consumer then logs nothing itself: with an observer it has no logger of
// its own. A failed receive is an outage's to say, once when the receives
// start failing and once when they succeed again (the consumer's
// EventReceivesFailing and EventReceivesRecovered); a line per failed
// receive, every backoff of an outage, would say it again and again.
func (w *Worker) logEvents(next consumer.Observer) consumer.Observer {
	return consumer.ObserverFunc(func(e consumer.Event) {
		switch e.Kind {
		case consumer.EventLeaseLost, consumer.EventSlotStuck, consumer.EventDeleteFailed, consumer.EventStalled:
			w.log.Warn("consumer: "+e.Kind.String(), "message", e.MessageID, "err", e.Err)
		case consumer.EventError:
			if e.Op != "ReceiveMessage" {
				w.log.Warn("consumer: "+e.Kind.String(), "op", e.Op, "message", e.MessageID, "err", e.Err)
			}
		case consumer.EventReceivesFailing:
			w.log.Warn("receives failing: a receive got no answer or an error (err says which); they are retried with a backoff, and a line says when they succeed again", "err", e.Err)
		case consumer.EventReceivesRecovered:
			w.log.Info("receives succeed again: the queue answers", "failed_receives", e.Count,
				"failing_for", e.Duration.Round(100*time.Millisecond))
		}
		if next != nil {
			next.Observe(e)
		}
	})
}
