package ledger

import (
	"slices"
	"time"
)

// What the doctor and /metrics ask of a queue's leases (doctor.go); the
// dashboard's questions are in observe.go.

// history returns a copy of a message's events.
func (l *Ledger) history(queueID uint64, messageID string, now time.Time) ([]LeaseEvent, bool) {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	tm, ok := ql.messages[messageID]
	if !ok {
		return nil, false
	}
	return append([]LeaseEvent(nil), tm.history...), true
}

// snapshot returns the queue's counters since start and over the window.
func (l *Ledger) snapshot(queueID uint64, now time.Time) (total, window counters) {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	total = ql.total
	total.durations = cloneHist(ql.total.durations)
	total.unrenewed = cloneHist(ql.total.unrenewed)
	return total, ql.windowed(now)
}

// pendingLapsed counts the lapsed leases whose holder has not come back but
// still may: leases begun within the last `within`, as long as holders were
// seen working before coming back late.
func (l *Ledger) pendingLapsed(queueID uint64, now time.Time, within time.Duration) uint64 {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	var n uint64
	since := now.Add(-within)
	for _, tm := range ql.messages {
		for _, r := range tm.leases {
			if r.state == leaseExpired && !r.proven && r.received && r.begin.After(since) {
				n++
			}
		}
	}
	return n
}

// hungLeases returns the running leases held more than threshold, renewed
// at least minHungRenewals times, the last time after they had been held
// p99: held far beyond the p99 and still renewed. Longest held first.
func (l *Ledger) hungLeases(queueID uint64, now time.Time, threshold, p99 time.Duration) []HungLease {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	var out []HungLease
	for _, r := range ql.active {
		if !r.received || r.renewals < minHungRenewals || now.Sub(r.begin) <= threshold || r.deadlineAt.Sub(r.begin) <= p99 {
			continue
		}
		out = append(out, HungLease{
			MessageID: r.msg.id, Epoch: r.epoch, Begin: r.begin, Held: now.Sub(r.begin), Renewals: r.renewals,
			LastRenewal: r.deadlineAt, Deadline: r.deadline, CeilingIn: max(r.begin.Add(MaxLeaseTime).Sub(now), 0),
			Client: r.msg.receiver(r.epoch),
		})
	}
	slices.SortFunc(out, func(a, b HungLease) int { return a.Begin.Compare(b.Begin) })
	return out
}

// completedP99 returns the p99 of the queue's completed leases since start,
// and how many there are.
func (l *Ledger) completedP99(queueID uint64, now time.Time) (time.Duration, uint64) {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	return ql.total.durations.quantile(0.99), ql.total.durations.n
}

// oldestLease returns when the oldest running lease began, zero if none.
func (l *Ledger) oldestLease(queueID uint64, now time.Time) time.Time {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	var oldest time.Time
	for _, r := range ql.active {
		if r.received && (oldest.IsZero() || r.begin.Before(oldest)) {
			oldest = r.begin
		}
	}
	return oldest
}

// owned returns the queue's counters of what this node originated since it
// started (queueLedger.own), for metrics that are summed over nodes. The
// counts never go down from one call to the next (see ownExpiredShown).
func (l *Ledger) owned(queueID uint64, now time.Time) counters {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	own := ql.own
	own.expired = max(own.expired, ql.ownExpiredShown)
	ql.ownExpiredShown = own.expired
	own.durations = cloneHist(ql.own.durations)
	own.unrenewed = cloneHist(ql.own.unrenewed)
	return own
}
