package ledger

import (
	"sort"
	"time"
)

// What the dashboard reads from the ledger: recent activity per minute, the
// leases in flight, the lease-duration distribution and late completions.

// LateCompletion is one late delete or visibility change.
type LateCompletion struct {
	MessageID string
	At        time.Time
	Kind      string // EventLateDelete or EventLateChange
	Epoch     uint32
	Late      time.Duration
	Duplicate bool
	// Refused and AlreadyDeleted mark a late delete that deleted nothing
	// (deleteMarks).
	Refused, AlreadyDeleted bool
	Client                  Client
}

// MinuteActivity is a queue's activity during one minute.
type MinuteActivity struct {
	Minute                                 time.Time
	Sent, Received, Deleted, Expired, Late uint64
}

// ActiveLease is a lease the ledger believes is running.
type ActiveLease struct {
	MessageID string
	Epoch     uint32
	Begin     time.Time
	Deadline  time.Time
	Renewals  int
	Client    Client
	// Seeded: it was running when this node started (Seed): its holder
	// (Client is zero) is not known, and Renewals counts those made since.
	Seeded bool
}

// HistogramBucket counts completed leases up to an upper bound.
type HistogramBucket struct {
	UpperBound time.Duration
	Count      uint64 // in this bucket only, not cumulative
}

// Activity returns the last windowMinutes minutes of activity, oldest
// first, one entry per minute (zero for quiet minutes).
func (l *Ledger) Activity(queueID uint64, now time.Time) []MinuteActivity {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	m := now.Unix() / 60
	out := make([]MinuteActivity, windowMinutes)
	for i := range out {
		minute := m - int64(windowMinutes-1-i)
		out[i].Minute = time.Unix(minute*60, 0).UTC()
		if b := &ql.window[minute%windowMinutes]; b.minute == minute {
			out[i].Sent, out[i].Received, out[i].Deleted = b.sent, b.received, b.completed
			out[i].Expired, out[i].Late = b.expired, b.late
		}
	}
	return out
}

// ActiveLeases returns the running leases, soonest deadline first, at most
// limit of them.
func (l *Ledger) ActiveLeases(queueID uint64, now time.Time, limit int) []ActiveLease {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	out := make([]ActiveLease, 0, min(limit, len(ql.active)))
	for _, r := range ql.active {
		out = append(out, ActiveLease{MessageID: r.msg.id, Epoch: r.epoch, Begin: r.begin, Deadline: r.deadline, Renewals: r.renewals, Client: r.client,
			Seeded: r.seeded})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Deadline.Before(out[j].Deadline) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Histogram returns the 15-minute window's lease durations (receive to
// delete) counted into buckets with the given upper bounds; a last bucket
// with bound 0 holds longer leases. A lease is counted exactly against a
// bound of whole milliseconds, except in a minute that saw more than
// maxExactDurations distinct durations, whose leases are placed within 2%.
func (l *Ledger) Histogram(queueID uint64, now time.Time, bounds []time.Duration) []HistogramBucket {
	out := make([]HistogramBucket, len(bounds)+1)
	for i, b := range bounds {
		out[i].UpperBound = b
	}
	add := func(v time.Duration, c uint64) {
		i := sort.Search(len(bounds), func(i int) bool { return v <= bounds[i] })
		out[i].Count += c
	}
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	m := now.Unix() / 60
	for i := range ql.window {
		b := &ql.window[i]
		if b.minute <= m-windowMinutes || b.minute > m {
			continue
		}
		if !b.inexact {
			for k, c := range b.millis {
				add(time.Duration(k)*time.Millisecond, c)
			}
			continue
		}
		for k, c := range b.durations.counts {
			add(bucketValue(k), c)
		}
	}
	return out
}

// RecentLate returns the queue's latest late completions, newest
// first.
func (l *Ledger) RecentLate(queueID uint64) []LateCompletion {
	l.mu.Lock()
	defer l.mu.Unlock()
	ql := l.queue(queueID)
	out := make([]LateCompletion, len(ql.recentLate))
	for i, lc := range ql.recentLate {
		out[len(out)-1-i] = lc
	}
	return out
}
