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

// overrunLease returns the longest leases that their holders overran (a
// late completion came by its receipt) first at or after since, as the
// period's count of late leases counts them, whenever they began, as they
// were given: from the receive or renewal that set their end to that end.
// asked is the longest of those whose length a request asked for (a
// receive's VisibilityTimeout, a renewal), queue the longest of those
// that had the queue's VisibilityTimeout of the time. Zero if the ledger
// knows none.
func (l *Ledger) overrunLease(queueID uint64, now, since time.Time) (asked, queue time.Duration) {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	for _, tm := range ql.messages {
		for _, r := range tm.leases {
			if !r.proven || !r.received || r.deadlineAt.IsZero() || provenAt(r).Before(since) {
				continue
			}
			if given := r.deadline.Sub(r.deadlineAt); r.queueTimeout {
				queue = max(queue, given)
			} else {
				asked = max(asked, given)
			}
		}
	}
	return asked, queue
}

// overrunHolders sorts the holders of the leases of queueID judged since
// since: overran, those that held a lease that overran (a late completion
// proved it); inTime, the others that completed leases, every one within
// it. A lease leased before the node started, whose holder is not known,
// counts for neither.
func (l *Ledger) overrunHolders(queueID uint64, now, since time.Time) (overran, inTime []Client) {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	late, done := map[Client]bool{}, map[Client]bool{}
	for _, tm := range ql.messages {
		for _, r := range tm.leases {
			if !r.received || r.seeded {
				continue
			}
			if r.proven && !provenAt(r).Before(since) {
				late[r.client] = true
			} else if _, at := eventTimes(r, EventDelete); !r.proven && r.state == leaseDeleted && !at.Before(since) {
				done[r.client] = true
			}
		}
	}
	for c := range late {
		overran = append(overran, c)
	}
	for c := range done {
		if !late[c] {
			inTime = append(inTime, c)
		}
	}
	slices.SortFunc(overran, byClient)
	slices.SortFunc(inTime, byClient)
	return overran, inTime
}

// provenAt is when r's holder first came back late, as its message's
// history says; r's deadline, before it, if the history no longer holds
// that event.
func provenAt(r *leaseRec) time.Time {
	if first, _ := eventTimes(r, EventLateDelete, EventLateChange); !first.IsZero() {
		return first
	}
	return r.deadline
}

// eventTimes are the first and the latest of the events of r of the kinds
// named that its message's history holds, zero if it holds none.
func eventTimes(r *leaseRec, kinds ...string) (first, last time.Time) {
	for _, ev := range r.msg.history {
		if ev.Epoch == r.epoch && slices.Contains(kinds, ev.Kind) {
			if first.IsZero() {
				first = ev.At
			}
			last = ev.At
		}
	}
	return first, last
}

// heldLeases returns the running leases held at least farHeld(p99),
// longest held first: those renewed after they had been held the p99
// (still renewed), those never renewed since (stalled), and those handed
// out in an answer that reached no client (unheld: Event.ClientLeft), held
// by no one.
func (l *Ledger) heldLeases(queueID uint64, now time.Time, p99 time.Duration) (renewed, stalled, unheld []HeldLease) {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	threshold := farHeld(p99)
	for _, r := range ql.active {
		if !r.received || now.Sub(r.begin) < threshold {
			continue
		}
		h := HeldLease{
			MessageID: r.msg.id, Epoch: r.epoch, Begin: r.begin, Held: now.Sub(r.begin), Renewals: r.renewals,
			Deadline: r.deadline, CeilingIn: max(r.begin.Add(MaxLeaseTime).Sub(now), 0),
			Progress: r.progress, Refusals: r.refusals, Running: true, Client: r.client, Seeded: r.seeded,
		}
		// Its holder's own last request on the lease (its receive, or a
		// change by its receipt) is no sign of life after it.
		if last, ok := ql.seen[r.client]; ok && r.client != (Client{}) && last.After(later(r.begin, r.deadlineAt)) {
			h.HolderSeen = last
		}
		if r.renewals > 0 {
			h.LastRenewal = r.deadlineAt
		}
		switch {
		case r.clientLeft:
			unheld = append(unheld, h)
		case r.renewals > 0 && r.deadlineAt.Sub(r.begin) > p99:
			renewed = append(renewed, h)
		default:
			stalled = append(stalled, h)
		}
	}
	byBegin := func(a, b HeldLease) int { return a.Begin.Compare(b.Begin) }
	slices.SortFunc(renewed, byBegin)
	slices.SortFunc(stalled, byBegin)
	slices.SortFunc(unheld, byBegin)
	return renewed, stalled, unheld
}

// refusedLeases returns the leases whose renewals the 12-hour ceiling
// refused at or after since, as the period's count of refusals counts
// them, longest held first: such a lease began hours before (those whose
// history no longer holds a refusal count if they began after since).
func (l *Ledger) refusedLeases(queueID uint64, now, since time.Time) []HeldLease {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	var out []HeldLease
	for _, tm := range ql.messages {
		for _, r := range tm.leases {
			if r.refusals == 0 || !r.received {
				continue
			}
			if _, last := eventTimes(r, EventRefused); last.Before(since) && (!last.IsZero() || r.begin.Before(since)) {
				continue
			}
			h := HeldLease{MessageID: tm.id, Epoch: r.epoch, Begin: r.begin, Renewals: r.renewals, Refusals: r.refusals,
				Deadline: r.deadline, Client: r.client, Running: r.state == leaseActive, Seeded: r.seeded}
			if h.Running {
				h.Held, h.CeilingIn = now.Sub(r.begin), max(r.begin.Add(MaxLeaseTime).Sub(now), 0)
			}
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b HeldLease) int { return a.Begin.Compare(b.Begin) })
	return out
}

// loops counts the leases of release loops begun after since: those
// released at once right after their message's lease before had been, and
// those given straight back right before a dead-letter move.
type loops struct {
	// rereleased and dead count them; leases, each once. A lease
	// released at once whose holder made no request on the queue since is
	// not counted as rereleased: a consumer that stops releases what it
	// holds, as it should, and a rolling deploy hands a message from one
	// stopping consumer to the next so.
	leases, rereleased, dead uint64
	// last is the latest of their releases at once and dead-letter moves.
	last time.Time
}

// releaseLoops finds the leases of release loops.
func (l *Ledger) releaseLoops(queueID uint64, now, since time.Time) loops {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	var out loops
	for _, tm := range ql.messages {
		for _, r := range tm.leases {
			if !r.received || r.begin.Before(since) || !(r.rereleased || r.deadNext) {
				continue
			}
			again := r.rereleased
			if again && r.client != (Client{}) {
				last, ok := ql.seen[r.client]
				again = ok && last.After(r.releasedAt)
			}
			if again {
				out.rereleased++
				out.last = later(out.last, r.releasedAt)
			}
			if r.deadNext {
				out.dead++
				out.last = later(out.last, r.deadAt)
			}
			if again || r.deadNext {
				out.leases++
			}
		}
	}
	return out
}

// retries counts the leases of retry loops begun after since: released
// with a delay (their holder let the end it set come: a retry's back-off,
// or "not ready") right after their message's retryRun leases before had
// been released too, at once or with a delay, or right before the
// message's move to the dead-letter queue, whose message no lease has
// completed since, by holders that went on (wentOn): one not seen since
// it shortened its lease may have crashed (lapsedHolders sorts those).
// Receives by interactive tools are left out.
// A retry that succeeds on its second or third try is no loop.
type retries struct {
	// leases counts them, dead those right before a move; batched counts
	// their messages that a lease of the period judged had with every
	// other message of a receive of several, all of which ended released
	// with a delay (batches.released).
	leases, dead, batched uint64
	msgs                  []string
	// last is the latest of their releases.
	last time.Time
}

// retryLoops finds the leases of retry loops, but those of batches that
// failed whole (b.whole), which are the batch finding's; b.released holds
// the batches whose every message was released with a delay.
func (l *Ledger) retryLoops(queueID uint64, now, since time.Time, b batches) retries {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	var out retries
	for _, tm := range ql.messages {
		counted := false
		for _, r := range tm.leases {
			if !r.received || r.begin.Before(since) || r.client.Interactive() || !releasedDelayed(r) || completedLater(r) || !ql.wentOn(r, now) {
				continue
			}
			if r.batch != 0 && b.whole[r.batch] || !retryShaped(r) {
				continue
			}
			moved := movedNext(r)
			out.leases++
			if moved {
				out.dead++
			}
			out.last = later(out.last, r.snoozeAt)
			if !counted {
				counted = true
				out.msgs = append(out.msgs, tm.id)
				if releasedTogether(tm, since, b.released) {
					out.batched++
				}
			}
		}
	}
	slices.Sort(out.msgs)
	return out
}

// releasedTogether says a lease of tm begun after since came with every
// other message of a receive of several, all released with a delay.
func releasedTogether(tm *trackedMessage, since time.Time, released map[uint64]bool) bool {
	for _, r := range tm.leases {
		if r.received && !r.begin.Before(since) && r.batch != 0 && released[r.batch] {
			return true
		}
	}
	return false
}

// retryShaped says r, released with a delay, is where a retry loop shows:
// right after its message's retryRun leases before were released too, or
// right before the message's move to the dead-letter queue.
func retryShaped(r *leaseRec) bool {
	return movedNext(r) || releasedBefore(r)
}

// retryRun is how many of a message's leases in a row, before one released
// with a delay, must have been released for it to count in a retry loop.
const retryRun = 2

// releasedBefore says the retryRun leases of r's message before r each
// ended released, at once or with a delay.
func releasedBefore(r *leaseRec) bool {
	for i := uint32(1); i <= retryRun; i++ {
		p := r.msg.leaseOf(r.epoch - i)
		if p == nil || !p.received || !(releasedDelayed(p) || p.releasedNow) {
			return false
		}
	}
	return true
}

// movedNext says r's message was moved to the dead-letter queue at the
// receive after r.
func movedNext(r *leaseRec) bool {
	next := r.msg.leaseOf(r.epoch + 1)
	return next != nil && next.state == leaseDeadLettered
}

// releasedDelayed says r ended released with a delay its holder let come.
func releasedDelayed(r *leaseRec) bool {
	return r.state == leaseReleased && r.snoozeLapsed && !r.releasedNow
}

// batches tells what became of the receives of several messages begun
// after since.
type batches struct {
	// failed counts the receives whose every message's lease ended without
	// a completion (lapsed or released, none deleted, none completed late),
	// of up to largest messages; again, the messages whose lease failed so
	// with its batch after the lease before it had too, at most times in a
	// row.
	failed, again  uint64
	largest, times int
	againMsgs      []string
	// last is the latest receive of a batch that failed whole.
	last time.Time
	// whole holds the batches (Event.Batch) that failed whole, once or
	// more: their lapses are told from single ones (lapsedHolders).
	whole map[uint64]bool
	// released holds the batches whose every message ended unfinished,
	// each released with a delay by its holder, none lapsed: no batch
	// failing whole by lapsing, but a retry of each message (retryLoops),
	// or a consumer that releases a batch whole when one message fails.
	released map[uint64]bool
}

// failedBatches finds the receives of several messages that failed whole
// (failedInBatch), at least one of them by a lapse; those whose every
// message its holder released with a delay are told apart (released): a
// consumer that retries each message it fails with a back-off leaves
// them, whatever the size of its receives. Receives by interactive tools
// are left out: a person's look is no batch of work; and so are those
// whose answer reached no client (Event.ClientLeft): no one had the batch.
func (l *Ledger) failedBatches(queueID uint64, now, since, undecided time.Time) batches {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	type tally struct{ seen, failed, lapsed, size int }
	byBatch := map[uint64]*tally{}
	for _, tm := range ql.messages {
		for _, r := range tm.leases {
			if r.batch == 0 || !r.received || r.zeroLength || r.clientLeft || r.begin.Before(since) || r.client.Interactive() {
				continue
			}
			t := byBatch[r.batch]
			if t == nil {
				t = &tally{size: r.batchSize}
				byBatch[r.batch] = t
			}
			t.seen++
			if ql.failedInBatch(r, now, undecided) {
				t.failed++
				if r.state == leaseExpired {
					t.lapsed++
				}
			}
		}
	}
	out := batches{whole: map[uint64]bool{}, released: map[uint64]bool{}}
	for id, t := range byBatch {
		switch {
		case t.size < 2 || t.seen < t.size || t.failed < t.size:
		case t.lapsed == 0:
			out.released[id] = true
		default:
			out.failed++
			out.largest = max(out.largest, t.size)
			out.whole[id] = true
		}
	}
	whole := func(r *leaseRec) bool { return r.batch != 0 && out.whole[r.batch] }
	for _, tm := range ql.messages {
		run, best := 0, 0
		for _, r := range tm.leases { // by epoch ascending
			if r.received && !r.begin.Before(since) && whole(r) {
				out.last = later(out.last, r.begin)
				run++
				best = max(best, run)
			} else {
				run = 0
			}
		}
		if best >= 2 {
			out.again++
			out.times = max(out.times, best)
			out.againMsgs = append(out.againMsgs, tm.id)
		}
	}
	slices.Sort(out.againMsgs)
	return out
}

// failedInBatch says r ended unfinished (endedUnfinished) by a holder that
// went on: one that released it with a delay, or let it lapse and made
// requests on the queue since. A lease whose holder may yet come back late
// (begun after undecided, if not zero) has not failed yet, nor one whose
// holder has not been seen since it lapsed: a consumer that crashed on its
// batch, or stopped, or works on without a request, leaves the same lapses
// as one that fails its batch whole, and its lapses are holders-stopped's.
func (ql *queueLedger) failedInBatch(r *leaseRec, now, undecided time.Time) bool {
	if !endedUnfinished(r) {
		return false
	}
	if r.state != leaseExpired {
		return ql.wentOn(r, now)
	}
	if !undecided.IsZero() && r.begin.After(undecided) {
		return false
	}
	return ql.wentOn(r, now)
}

// wentOn says r's holder went on after r lapsed or it released r with a
// delay (fateOf), or is not known.
func (ql *queueLedger) wentOn(r *leaseRec, now time.Time) bool {
	fate, _ := ql.fateOf(r, now)
	return fate == holderAlive || fate == holderUnknown
}

// endedUnfinished says r ended without its holder completing it: it
// lapsed or was released with a delay (a retry's back-off), perhaps its
// message dead-lettered since, with no delete in time or late. A release
// at once (VisibilityTimeout 0) is a holder giving the message back (not
// ready, or stopping), which the release-loop finding judges.
func endedUnfinished(r *leaseRec) bool {
	switch r.state {
	case leaseExpired, leaseReleased, leaseDeadLettered:
		return !r.proven && !r.lateDeleted && !r.releasedNow
	}
	return false
}

// oldestRunning returns the running lease held longest, if any.
func (l *Ledger) oldestRunning(queueID uint64, now time.Time) HeldLease {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	var oldest *leaseRec
	for _, r := range ql.active {
		if r.received && (oldest == nil || r.begin.Before(oldest.begin)) {
			oldest = r
		}
	}
	if oldest == nil {
		return HeldLease{}
	}
	h := HeldLease{MessageID: oldest.msg.id, Epoch: oldest.epoch, Begin: oldest.begin, Held: now.Sub(oldest.begin),
		Renewals: oldest.renewals, Deadline: oldest.deadline, Running: true, Client: oldest.client, Seeded: oldest.seeded}
	if oldest.renewals > 0 {
		h.LastRenewal = oldest.deadlineAt
	}
	return h
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
