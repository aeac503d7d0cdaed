package worker

import (
	"github.com/baton-sqs/baton/consumer"
)

// logEvents logs the consumer runtime's events that call for attention to
// the worker's log, in the runtime's own words (consumer.LogEvent: lost
// leases, late deletes, stalled, overrun and stuck handlers, failed calls,
// a failed receive as an outage's start and end, the start-up check's
// warnings), then tells next
// (Config.Observer, may be nil). The consumer then logs nothing itself:
// with an observer it has no logger of its own.
func (w *Worker) logEvents(next consumer.Observer) consumer.Observer {
	return consumer.ObserverFunc(func(e consumer.Event) {
		logged := e
		logged.Queue = "" // the worker's log names its queue already
		consumer.LogEvent(w.log, logged)
		if next != nil {
			next.Observe(e)
		}
	})
}
