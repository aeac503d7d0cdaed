package consumer

import (
	"sync"
	"time"
)

// Renewals extend a lease by a span sized from what handlers really take,
// as Google Cloud Pub/Sub's client libraries size ack deadlines: from the
// 99th percentile of the observed durations, within bounds (theirs are
// 10 s to 600 s; see "Lease management" in the Pub/Sub documentation). A
// handler that usually needs five minutes is then renewed about once,
// instead of every third of a 30 s lease; a crashed consumer's messages
// come back within the span, which the upper bound keeps at ten minutes.

const (
	// spanSamples is how many successful handler durations the runtime
	// waits for before it trusts their p99: until then renewals extend by
	// the lease length (WithVisibilityTimeout, or the queue's).
	spanSamples = 100
	// spanMax bounds the span from above (unless the lease length is
	// longer: the span never falls below it).
	spanMax = 10 * time.Minute
	// spanBuckets are one-second buckets up to spanMax, and one for
	// longer durations.
	spanBuckets = int(spanMax/time.Second) + 2
)

// durations is a histogram of successful handler durations in whole
// seconds (rounded up), as Pub/Sub's libraries keep theirs.
type durations struct {
	mu       sync.Mutex
	counts   [spanBuckets]int64
	n        int64
	outgrown bool // EventLeaseOutgrown was reported
}

// add records one duration.
func (h *durations) add(d time.Duration) {
	i := int((d + time.Second - 1) / time.Second)
	i = min(max(i, 0), spanBuckets-1)
	h.mu.Lock()
	h.counts[i]++
	h.n++
	h.mu.Unlock()
}

// p99 returns the 99th percentile in whole seconds, and whether there are
// enough samples to trust it.
func (h *durations) p99() (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.p99Locked()
}

func (h *durations) p99Locked() (time.Duration, bool) {
	if h.n == 0 {
		return 0, false
	}
	// The smallest bucket with at least 99% of the samples at or below.
	want := (h.n*99 + 99) / 100
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= want {
			return time.Duration(i) * time.Second, h.n >= spanSamples
		}
	}
	return time.Duration(spanBuckets-1) * time.Second, h.n >= spanSamples
}

// outgrow reports, once, that the trusted p99 passed vis.
func (h *durations) outgrow(vis time.Duration) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.outgrown {
		return 0, false
	}
	p, ok := h.p99Locked()
	if !ok || p <= vis {
		return 0, false
	}
	h.outgrown = true
	return p, true
}

// leaseSpan is how long a renewal extends a lease: the lease length until
// enough handlers have finished, then their p99 with a quarter of headroom
// (a renewal comes a while after the handler started, and durations
// drift), never under the lease length nor over ten minutes (or the lease
// length, if longer).
func (c *Consumer) leaseSpan() time.Duration {
	p, ok := c.durations.p99()
	if !ok {
		return c.cfg.visibility
	}
	span := (p + p/4 + time.Second - 1).Truncate(time.Second)
	return min(max(span, c.cfg.visibility), max(spanMax, c.cfg.visibility))
}

// HandlerP99 returns the 99th percentile of the durations of the handlers
// that succeeded so far, in whole seconds (rounded up; durations past ten
// minutes count as ten minutes and a second), and whether enough have
// finished (100) for renewals to be sized from it.
func (c *Consumer) HandlerP99() (time.Duration, bool) { return c.durations.p99() }

// LeaseExtension returns how long a renewal extends a lease now: the lease
// length until 100 handlers have succeeded, then their p99 plus a quarter,
// between the lease length and ten minutes (see HandlerP99). Every
// EventRenewed carries the extension it asked for as Delay, and Metrics
// exports the last one as lease_extension_seconds.
func (c *Consumer) LeaseExtension() time.Duration { return c.leaseSpan() }

// handled records a successful handler's duration, and reports once when
// their p99 outgrows the lease given at receive.
func (c *Consumer) handled(d time.Duration) {
	c.durations.add(d)
	if p, ok := c.durations.outgrow(c.cfg.visibility); ok {
		c.observe(Event{Kind: EventLeaseOutgrown, Duration: p, Visibility: c.cfg.visibility})
	}
}
