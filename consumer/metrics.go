package consumer

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Metrics is an Observer that keeps Prometheus metrics and serves them in
// the Prometheus text exposition format (version 0.0.4), so it needs no
// client library: mount it on an HTTP mux (it is an http.Handler) or write
// it out with WriteTo. One Metrics may observe several consumers; series
// carry a queue label.
//
// The metrics, all prefixed baton_consumer_:
//
//	received_messages_total            counter    queue
//	handler_duration_seconds           histogram  queue, outcome
//	handler_visibility_ratio           histogram  queue: handler duration / effective visibility
//	visibility_timeout_seconds         gauge      queue: the lease length handlers are given
//	renewals_total                     counter    queue
//	lease_extension_seconds            gauge      queue: the last renewal's extension
//	renewals_per_attempt               histogram  queue
//	renew_failures_total               counter    queue
//	stalls_total                       counter    queue
//	attempt_timeouts_total             counter    queue
//	leases_lost_total                  counter    queue
//	late_deletes_total                 counter    queue
//	deletes_total                      counter    queue, reason
//	delete_failures_total              counter    queue
//	releases_total                     counter    queue, reason
//	dead_lettered_total                counter    queue
//	snoozed_total                      counter    queue
//	duplicates_total                   counter    queue
//	slots_stuck_total                  counter    queue
//	errors_total                       counter    queue, op
//	last_receive_snoozes_total         counter    queue
//
// handler_visibility_ratio answers "does p99 fit the lease?":
// histogram_quantile(0.99, …) above 1 means more than one attempt in a
// hundred outlives the lease it was first given and depends on renewals.
type Metrics struct {
	mu       sync.Mutex
	families map[string]*family
}

type family struct {
	name, help, typ string
	buckets         []float64
	series          map[string]*series
}

type series struct {
	value  float64
	counts []uint64
	sum    float64
	count  uint64
}

var (
	durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	ratioBuckets    = []float64{.1, .25, .5, .75, .9, 1, 1.5, 2, 5, 10}
	renewalBuckets  = []float64{0, 1, 2, 3, 5, 10, 20, 50, 100}
)

// NewMetrics returns an empty set of metrics.
func NewMetrics() *Metrics { return &Metrics{families: map[string]*family{}} }

func (m *Metrics) fam(name, typ, help string, buckets []float64) *family {
	f, ok := m.families[name]
	if !ok {
		f = &family{name: "baton_consumer_" + name, help: help, typ: typ, buckets: buckets, series: map[string]*series{}}
		m.families[name] = f
	}
	return f
}

func (f *family) at(labels ...string) *series {
	var b strings.Builder
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labels[i])
		b.WriteString(`="`)
		b.WriteString(escapeLabel(labels[i+1]))
		b.WriteByte('"')
	}
	key := b.String()
	s, ok := f.series[key]
	if !ok {
		s = &series{}
		if f.buckets != nil {
			s.counts = make([]uint64, len(f.buckets))
		}
		f.series[key] = s
	}
	return s
}

func (s *series) observe(buckets []float64, v float64) {
	for i, b := range buckets {
		if v <= b {
			s.counts[i]++
		}
	}
	s.sum += v
	s.count++
}

func (m *Metrics) inc(name, help string, labels ...string) {
	m.fam(name, "counter", help, nil).at(labels...).value++
}

// Observe records an event.
func (m *Metrics) Observe(e Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := e.Queue
	switch e.Kind {
	case EventReceived:
		m.fam("received_messages_total", "counter", "Messages received.", nil).at("queue", q).value += float64(e.Count)
	case EventHandled:
		f := m.fam("handler_duration_seconds", "histogram", "How long handlers ran.", durationBuckets)
		f.at("queue", q, "outcome", e.Outcome).observe(f.buckets, e.Duration.Seconds())
		if e.Visibility > 0 {
			r := m.fam("handler_visibility_ratio", "histogram", "Handler duration divided by the effective visibility (the lease length given at receive).", ratioBuckets)
			r.at("queue", q).observe(r.buckets, e.Duration.Seconds()/e.Visibility.Seconds())
			m.fam("visibility_timeout_seconds", "gauge", "The lease length handlers are given at receive.", nil).at("queue", q).value = e.Visibility.Seconds()
		}
		p := m.fam("renewals_per_attempt", "histogram", "Lease renewals during one attempt.", renewalBuckets)
		p.at("queue", q).observe(p.buckets, float64(e.Renewals))
	case EventRenewed:
		m.inc("renewals_total", "Lease renewals.", "queue", q)
		if e.Delay > 0 {
			m.fam("lease_extension_seconds", "gauge", "How long the last renewal extended a lease: sized from the handlers' p99 once enough have finished.", nil).at("queue", q).value = e.Delay.Seconds()
		}
	case EventRenewFailed:
		m.inc("renew_failures_total", "Lease renewals that failed.", "queue", q)
	case EventStalled:
		m.inc("stalls_total", "Attempts cancelled for lack of progress.", "queue", q)
	case EventAttemptTimeout:
		m.inc("attempt_timeouts_total", "Attempts cancelled for running too long.", "queue", q)
	case EventLeaseLost:
		m.inc("leases_lost_total", "Leases the runtime gave up as lost.", "queue", q)
	case EventLateDelete:
		m.inc("late_deletes_total", "Deletes sent after the lease was lost.", "queue", q)
	case EventDeleted:
		m.inc("deletes_total", "Messages deleted.", "queue", q, "reason", string(e.Reason))
	case EventDeleteFailed:
		m.inc("delete_failures_total", "Deletes that failed for good.", "queue", q)
	case EventReleased:
		m.inc("releases_total", "Leases released early.", "queue", q, "reason", string(e.Reason))
	case EventDeadLettered:
		m.inc("dead_lettered_total", "Messages sent to the dead-letter queue by the runtime.", "queue", q)
	case EventSnoozed:
		m.inc("snoozed_total", "Messages snoozed by re-send.", "queue", q)
	case EventDuplicate:
		m.inc("duplicates_total", "Deliveries skipped as already done.", "queue", q)
	case EventSlotStuck:
		m.inc("slots_stuck_total", "Handlers that did not return within the grace after a cancel.", "queue", q)
	case EventError:
		m.inc("errors_total", "Failed SQS or store calls.", "queue", q, "op", e.Op)
	case EventLastReceiveSnooze:
		m.inc("last_receive_snoozes_total", "NotReady snoozes on the last receive the redrive policy allows.", "queue", q)
	}
}

// ServeHTTP writes the metrics in the text exposition format.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = m.WriteTo(w)
}

// WriteTo writes the metrics in the text exposition format, families and
// series in name order.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: bufio.NewWriter(w)}
	m.mu.Lock()
	for _, n := range slices.Sorted(maps.Keys(m.families)) {
		f := m.families[n]
		fmt.Fprintf(cw, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for _, k := range slices.Sorted(maps.Keys(f.series)) {
			s := f.series[k]
			if f.typ != "histogram" {
				fmt.Fprintf(cw, "%s%s %s\n", f.name, braces(k), formatFloat(s.value))
				continue
			}
			for i, b := range f.buckets {
				fmt.Fprintf(cw, "%s_bucket%s %d\n", f.name, braces(join(k, `le="`+formatFloat(b)+`"`)), s.counts[i])
			}
			fmt.Fprintf(cw, "%s_bucket%s %d\n", f.name, braces(join(k, `le="+Inf"`)), s.count)
			fmt.Fprintf(cw, "%s_sum%s %s\n", f.name, braces(k), formatFloat(s.sum))
			fmt.Fprintf(cw, "%s_count%s %d\n", f.name, braces(k), s.count)
		}
	}
	m.mu.Unlock()
	if err := cw.w.(*bufio.Writer).Flush(); err != nil && cw.err == nil {
		cw.err = err
	}
	return cw.n, cw.err
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

// Write writes p and counts the bytes.
func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

func braces(labels string) string {
	if labels == "" {
		return ""
	}
	return "{" + labels + "}"
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
