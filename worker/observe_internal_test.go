package worker

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
)

// The worker's log has the consumer runtime's lines for every event the
// runtime would log itself (a handler that succeeded after its lease was
// lost, one that ran ten times the p99 without progress), named once by
// the worker's queue, and passes each event on to the observer it was
// given. It logged only lost leases, stuck slots, failed deletes, stalls
// and errors: a late delete reached no line.
func TestWorkerLogsTheRuntimesEvents(t *testing.T) {
	logs := &logbuf.Buffer{}
	w := &Worker{log: slog.New(slog.NewTextHandler(logs, nil)).With("queue", "jobs")}
	var passed []consumer.EventKind
	o := w.logEvents(consumer.ObserverFunc(func(e consumer.Event) { passed = append(passed, e.Kind) }))
	for _, k := range []consumer.EventKind{consumer.EventLateDelete, consumer.EventNoProgress, consumer.EventReceived} {
		o.Observe(consumer.Event{Kind: k, Queue: "jobs", MessageID: "m1"})
	}
	log := logs.String()
	for _, want := range []string{"handler succeeded after its lease was lost", "handler has run ten times its p99 without progress"} {
		if !strings.Contains(log, want) {
			t.Errorf("no line saying %q in the worker's log:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "\n"); n != 2 {
		t.Errorf("%d lines, want 2 (a receive is no line):\n%s", n, log)
	}
	if strings.Count(log, "queue=jobs") != 2 {
		t.Errorf("each line should name the queue once:\n%s", log)
	}
	if len(passed) != 3 {
		t.Errorf("%d events passed on to the observer, want 3", len(passed))
	}
}
