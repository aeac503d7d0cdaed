package ledger

import (
	"time"
)

// The counts a queue keeps since start, of this node's own events, and per
// minute over the sliding window.

// counters are the ledger's tallies for one period.
type counters struct {
	sent, received, completed, expired, late, duplicates uint64
	redeliveries, lapsedWorking, renewals, releases      uint64
	deadLettered                                         uint64
	// refusedDeletes counts the late deletes a FIFO queue refused: the
	// message stays, so the lease did not complete, but its handler had
	// finished, and how long it ran counts in durations and unrenewed.
	refusedDeletes uint64
	// alreadyDeleted counts the deletes that found their message already
	// deleted (deleteMarks): they deleted nothing, but their handlers had
	// finished, and count as refused ones do.
	alreadyDeleted uint64
	// untimed counts the completed leases (in completed) whose handler's
	// time is not known: a delete whose answer was lost came again after
	// the lease's end (lostDelete), and when its first attempt was made
	// the ledger did not see. They count in no duration. untimedInTime
	// counts those of them on a FIFO queue, which refuses a late delete:
	// the lost attempt, which deleted the message, came in time.
	untimed, untimedInTime uint64
	durations              histogram // receive to delete, refused or not
	unrenewed              histogram // the same, leases never renewed
	// atMost[i] counts the durations at most LeaseDurationBounds[i], and
	// durationSum adds them up: /metrics's histogram, exact where
	// durations' buckets are within 2%.
	atMost      [len(LeaseDurationBounds)]uint64
	durationSum time.Duration
	// lateWorked is the longest from a receive to a late completion by its
	// receipt: its holder worked at least that long, whether or not it
	// ever deleted.
	lateWorked time.Duration
	// lateLeases counts the leases completed late, once each however many
	// late requests their holders made; lapsedReturned the lapsed leases
	// whose holder later came back with a late completion. The lapsed
	// leases less these are those whose holder never came back.
	lateLeases, lapsedReturned uint64
	// deadAfterRelease counts the messages moved to the dead-letter queue
	// at the receive right after one whose holder gave them straight back
	// (released at once, or received with VisibilityTimeout 0).
	deadAfterRelease uint64
	// refused counts the renewals the 12-hour ceiling refused.
	refused uint64
	// failedAgain counts the redeliveries after a lapse whose holder's
	// delete, in time, the store failed: the holder came back in time, so
	// they are neither lapsedWorking nor redeliveries it never came back for.
	failedAgain uint64
	// failedDuplicates counts the duplicates (in duplicates) of leases
	// whose holder's delete, in time, the store failed: not late
	// completions, though counted with theirs.
	failedDuplicates uint64
	// lateRenewals counts the late changes to a later end that changed
	// nothing (LeaseLapsed): heartbeats that came after their lease ended.
	lateRenewals uint64
	// lastLate and lastRefused are when the latest late completion and
	// the latest refused renewal happened, zero if none did.
	lastLate, lastRefused time.Time
}

func (c *counters) merge(o *counters) {
	c.sent += o.sent
	c.received += o.received
	c.completed += o.completed
	c.refusedDeletes += o.refusedDeletes
	c.alreadyDeleted += o.alreadyDeleted
	c.untimed += o.untimed
	c.untimedInTime += o.untimedInTime
	c.expired += o.expired
	c.late += o.late
	c.duplicates += o.duplicates
	c.redeliveries += o.redeliveries
	c.lapsedWorking += o.lapsedWorking
	c.failedAgain += o.failedAgain
	c.failedDuplicates += o.failedDuplicates
	c.renewals += o.renewals
	c.releases += o.releases
	c.deadLettered += o.deadLettered
	c.lateLeases += o.lateLeases
	c.lapsedReturned += o.lapsedReturned
	c.deadAfterRelease += o.deadAfterRelease
	c.refused += o.refused
	c.lateRenewals += o.lateRenewals
	c.durations.merge(&o.durations)
	c.unrenewed.merge(&o.unrenewed)
	for i := range c.atMost {
		c.atMost[i] += o.atMost[i]
	}
	c.durationSum += o.durationSum
	c.lateWorked = max(c.lateWorked, o.lateWorked)
	c.lastLate = later(c.lastLate, o.lastLate)
	c.lastRefused = later(c.lastRefused, o.lastRefused)
}

// LeaseDurationBounds are the upper bounds of the lease-duration histogram
// /metrics exports, from a quick handler to the 12-hour ceiling; the ledger
// counts every completed lease against them exactly.
var LeaseDurationBounds = [...]time.Duration{
	100 * time.Millisecond, 500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second,
	10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 4 * time.Hour, 12 * time.Hour,
}

// addDuration counts a lease's duration, receive to delete (refused or not).
func (c *counters) addDuration(d time.Duration) {
	c.durations.add(d)
	c.durationSum += d
	for i, b := range LeaseDurationBounds {
		if d <= b {
			c.atMost[i]++
		}
	}
}

// dec takes one from a counter that a retracted inference had added to,
// never below zero.
func dec(n *uint64) {
	if *n > 0 {
		*n--
	}
}

type minuteCounters struct {
	minute int64
	counters
	// millis counts the minute's lease durations (receive to delete) by
	// whole milliseconds, rounded up, while they take at most
	// maxExactDurations values, so that LeaseHistogram places a lease on
	// the right side of a bound of whole milliseconds (the visibility
	// timeout), where durations' 2% buckets can put it on either. inexact
	// says the minute saw more values: it counts only in durations.
	millis  map[int64]uint64
	inexact bool
}

// maxExactDurations bounds the distinct durations a minute keeps exactly.
const maxExactDurations = 1024

// countMillis records a lease duration in the exact counts of the minute of
// at, after count has made that minute's slot current.
func (ql *queueLedger) countMillis(at time.Time, d time.Duration) {
	m := at.Unix() / 60
	b := &ql.window[m%windowMinutes]
	if b.minute != m || b.inexact {
		return
	}
	k := int64((d + time.Millisecond - 1) / time.Millisecond)
	if _, ok := b.millis[k]; !ok && len(b.millis) >= maxExactDurations {
		b.millis, b.inexact = nil, true
		return
	}
	if b.millis == nil {
		b.millis = make(map[int64]uint64)
	}
	b.millis[k]++
}

// count applies f to the since-start counters, to own when local, and to
// the minute of at. A minute older than the one its slot of the window now
// holds has left the window and only counts since start.
func (ql *queueLedger) count(at time.Time, local bool, f func(*counters)) {
	f(&ql.total)
	if local {
		f(&ql.own)
	}
	m := at.Unix() / 60
	b := &ql.window[m%windowMinutes]
	if b.minute > m {
		return
	}
	if b.minute != m {
		*b = minuteCounters{minute: m}
	}
	f(&b.counters)
}

// uncount takes back what count did with the same at and local, for an
// inference a later event disproved.
func (ql *queueLedger) uncount(at time.Time, local bool, f func(*counters)) {
	f(&ql.total)
	if local {
		f(&ql.own)
	}
	m := at.Unix() / 60
	if b := &ql.window[m%windowMinutes]; b.minute == m {
		f(&b.counters)
	}
}

// windowFrom is when the first minute windowed sums began: the window
// counts the events at or after it.
func windowFrom(now time.Time) time.Time {
	return time.Unix((now.Unix()/60-windowMinutes+1)*60, 0)
}

// windowed sums the minutes of the last windowMinutes.
func (ql *queueLedger) windowed(now time.Time) counters {
	var c counters
	m := now.Unix() / 60
	for i := range ql.window {
		if b := &ql.window[i]; b.minute > m-windowMinutes && b.minute <= m {
			c.merge(&b.counters)
		}
	}
	return c
}

func cloneHist(h histogram) histogram {
	c := histogram{n: h.n, max: h.max, counts: make(map[int]uint64, len(h.counts))}
	for k, v := range h.counts {
		c.counts[k] = v
	}
	return c
}
