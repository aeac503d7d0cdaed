package ledger

import (
	"time"
)

// A queue's lease report and /metrics' figures: what the doctor (doctor.go)
// answers, and the statistics it judges.

// LeaseStats are a queue's lease statistics over one period.
type LeaseStats struct {
	// Completed counts the deletes that deleted the message (in time, or
	// late on a standard queue); RefusedDeletes the late deletes a FIFO
	// queue refused, which left the message to run again; AlreadyDeleted
	// the deletes that found their message already deleted (by the
	// receiver it went to after a lapse, a purge, the retention sweep),
	// which SQS answers with success though they deleted nothing.
	Sent, Received, Completed, RefusedDeletes, AlreadyDeleted uint64
	// Untimed counts the completed leases whose handler's time is not
	// known: their holder's delete was made, its answer lost, and its
	// retry came after the lease's end, so when the delete was made, and
	// whether in time, the server did not see. They are in Completed, and
	// in no duration. UntimedInTime counts those of them on a FIFO queue:
	// it refuses a late delete, so the attempt that deleted the message
	// came in time, though when is not known.
	Untimed, UntimedInTime uint64
	// P50 to Max are of the leases' durations from receive to delete, the
	// refused deletes' included: their handlers had finished, and the
	// timeout must cover how long they ran (Finished counts them all).
	P50, P90, P99, Max time.Duration
	// UnrenewedP99 is the p99 of those leases never renewed, which is what
	// the visibility timeout alone must cover.
	UnrenewedP99 time.Duration
	// UnrenewedCompleted counts those leases.
	UnrenewedCompleted uint64
	Expired            uint64
	// Late counts late completions: deletes or visibility changes with the
	// receipt of a lease that had already lapsed. LateLeases counts the
	// leases they came by, once each.
	Late, LateLeases uint64
	// Duplicates counts the leases completed late after their message had
	// meanwhile been leased to another receiver, or whose delete in time the
	// store failed, their message leased to another before the retry:
	// confirmed duplicate executions, one per lease however many requests
	// its holder made. DuplicatesStoreFailed are those of them whose
	// delete the store failed: no late completion came of them.
	Duplicates, DuplicatesStoreFailed uint64
	// RedeliveriesLapsedWhileWorking are redeliveries after a lapse that a
	// later late completion proved happened while the holder still worked;
	// RedeliveriesStoreFailed those after a lapse whose holder deleted in
	// time and the store failed the delete (store-failed): it came back,
	// in time; RedeliveriesNeverReturned are the rest (an error path or a
	// crash, or a holder that has not come back yet).
	RedeliveriesLapsedWhileWorking uint64
	RedeliveriesStoreFailed        uint64
	RedeliveriesNeverReturned      uint64
	// LapsedReturned counts the lapsed leases whose holder came back with
	// a late completion; Expired less these never came back (or have not
	// yet).
	LapsedReturned     uint64
	Renewals, Releases uint64
	// DeadLetteredAfterRelease counts the messages moved to the dead-letter
	// queue at the receive right after a lease that gave them straight back
	// (released at once, or received with VisibilityTimeout 0): that lease
	// counted toward maxReceiveCount though nothing was done with it.
	DeadLetteredAfterRelease uint64
	DeadLettered             uint64
	RenewalsPerLease         float64
	// RefusedRenewals counts the renewals the 12-hour ceiling refused.
	RefusedRenewals uint64
	// LateWorkedMax is the longest a holder is known to have worked: from
	// its receive to a late delete or visibility change by its receipt.
	// It covers holders that never deleted, which P99 does not; the doctor
	// goes by it when no lease completed.
	LateWorkedMax time.Duration
	// LateRenewals counts the late completions that were renewals
	// (visibility changes to a later time) that found their lease lapsed
	// and the message not in flight: a heartbeat that came after the lease
	// had ended, answered with success (as SQS answers it) but extending
	// nothing.
	LateRenewals uint64
	// LastLate and LastRefused are when the latest late completion and
	// the latest renewal the ceiling refused happened, zero if none did.
	LastLate, LastRefused time.Time
}

// Finished counts the leases whose holder deleted, the deletes refused as
// late and those of messages already deleted included, the Untimed left
// out: those P50 to Max and the duration histogram are of.
func (s LeaseStats) Finished() uint64 { return s.timed() + s.RefusedDeletes + s.AlreadyDeleted }

// lateDuplicates counts the duplicates that came of late completions:
// those of deletes the store failed are store-failed's, not an overrun's.
func (s LeaseStats) lateDuplicates() uint64 {
	return s.Duplicates - min(s.DuplicatesStoreFailed, s.Duplicates)
}

// timed counts the completed leases whose handler's time is known.
func (s LeaseStats) timed() uint64 { return s.Completed - min(s.Untimed, s.Completed) }

// none reports whether the stats saw no lease: none began, completed,
// lapsed or completed late.
func (s LeaseStats) none() bool {
	return s.Received == 0 && s.Completed == 0 && s.Finished() == 0 && s.Late == 0 && s.Expired == 0
}

func statsOf(c *counters) LeaseStats {
	s := LeaseStats{
		Sent: c.sent, Received: c.received, Completed: c.completed, RefusedDeletes: c.refusedDeletes, AlreadyDeleted: c.alreadyDeleted,
		Untimed: c.untimed, UntimedInTime: c.untimedInTime,
		P50: c.durations.quantile(0.5), P90: c.durations.quantile(0.9), P99: c.durations.quantile(0.99), Max: c.durations.max,
		UnrenewedP99: c.unrenewed.quantile(0.99), UnrenewedCompleted: c.unrenewed.n,
		Expired: c.expired, Late: c.late, LateLeases: c.lateLeases, Duplicates: c.duplicates,
		DuplicatesStoreFailed:          c.failedDuplicates,
		RedeliveriesLapsedWhileWorking: c.lapsedWorking,
		RedeliveriesStoreFailed:        c.failedAgain,
		RedeliveriesNeverReturned:      c.redeliveries - min(c.redeliveries, c.lapsedWorking+c.failedAgain),
		LapsedReturned:                 c.lapsedReturned,
		DeadLetteredAfterRelease:       c.deadAfterRelease,
		Renewals:                       c.renewals, Releases: c.releases, DeadLettered: c.deadLettered,
		LateWorkedMax: c.lateWorked, RefusedRenewals: c.refused, LateRenewals: c.lateRenewals,
		LastLate: c.lastLate, LastRefused: c.lastRefused,
	}
	if c.received > 0 {
		s.RenewalsPerLease = float64(c.renewals) / float64(c.received)
	}
	return s
}

// Finding is one thing the doctor names: what it saw, on how many
// leases, and what to do.
type Finding struct {
	Kind string // one of the Diagnosis constants
	// Leases is how many leases the finding rests on (see MinFindingLeases).
	Leases   uint64
	Evidence string
	Fix      string
	// Held lists the leases the finding is about, longest held first:
	// the running leases held far beyond the p99 (DiagnosisHeldUnrenewed,
	// DiagnosisHeldRenewed, DiagnosisLongJob), the leases whose renewals
	// the ceiling refused (DiagnosisCeilingRefused).
	Held []HeldLease
	// Last is when the latest event the finding rests on happened (the
	// latest lapse, late completion, release at once, refused renewal or
	// receive of a batch that failed whole), LastEvent what it was, and
	// LastSeen says so with how long before the report it was: a finding
	// stays while its evidence is in the period judged, after its cause
	// may have stopped. Last is zero for the findings on leases running
	// now (held-unrenewed, held-renewed, long-job).
	Last      time.Time
	LastEvent string
	LastAgo   time.Duration
	LastSeen  string
}

// HeldLease is a lease a finding names.
type HeldLease struct {
	MessageID string
	Epoch     uint32
	Begin     time.Time
	// Held is how long it has been held, zero if it no longer runs.
	Held     time.Duration
	Renewals int
	// LastRenewal is when its holder last renewed it (zero if never);
	// Deadline is its end: when its message comes back, unless renewed.
	LastRenewal, Deadline time.Time
	// CeilingIn is how long until it reaches MaxLeaseTime after its
	// receive, when no renewal can keep it.
	CeilingIn time.Duration
	// Progress: its latest renewal was made on the handler's progress
	// (Event.Progress). Refusals counts its renewals the ceiling refused.
	Progress bool
	Refusals int
	// Running: the lease has not ended.
	Running bool
	Client  Client
	// HolderSeen is when its holder (Client) last made a request on the
	// queue after its last request on the lease (the receive that began
	// it, or its latest change by the receipt), zero if it made none
	// since: a holder seen since is not gone.
	HolderSeen time.Time
	// Seeded: it was running when this node started (ledger Seed): its
	// holder (Client is zero) is not known, nor whether it was renewed
	// before then; Renewals counts those made since.
	Seeded bool
}

// mayBeGivenBack says that h may be no lease kept at all but a message
// given back with a delay longer than its lease had left (a retry's
// back-off, or not ready), which reads as a renewal (changed): renewed
// once, and its holder went on making requests on the queue since without
// renewing it again. A heartbeat renews again before the end it set, and
// a holder gone makes no request; until either shows, the server cannot
// call it hung.
func (h HeldLease) mayBeGivenBack() bool { return h.Renewals == 1 && h.HolderSeen.After(h.LastRenewal) }

// LeaseReport is what the queue has seen of its leases and what to do
// about it: the data of `baton doctor` and the dashboard's lease panel.
type LeaseReport struct {
	Queue             string
	VisibilityTimeout int
	// FIFO: the queue is a FIFO queue.
	FIFO bool
	// Window covers the last 15 minutes, SinceStart the life of the node
	// that answers. On a store several nodes share (a baton.LedgerBus) both
	// cover the leases of every node, as far as this node has seen them
	// since it started.
	Window     LeaseStats
	SinceStart LeaseStats
	// HistorySince is when this node's ledger began: it is kept in memory
	// and starts whenever the server starts, whatever the store, with the
	// leases then in flight (Seed) and nothing of those that had ended.
	HistorySince time.Time
	// Findings are judged on the window (on everything since start when
	// the window saw nothing); the held-lease findings on the leases
	// running now against the p99 since start. Diagnosis is the first
	// finding's kind (see the Diagnosis constants).
	Findings  []Finding
	Diagnosis string
	// JudgedSinceStart: the window saw no lease, so the findings were
	// judged on SinceStart. Every figure shown beside them should be of
	// the same period.
	JudgedSinceStart bool
	// RecommendedVisibilityTimeout is p99 × 1.5 rounded up, at most 12 h:
	// more than the timeout in force when leases are too short (the one in
	// force when it was raised since the leases overran and covers them),
	// less when
	// the timeout is many times what the completed leases took (the stall
	// a crash causes). With no p99 to go by (too few completed leases) it
	// is the timeout in force.
	RecommendedVisibilityTimeout int
	// Advice is the findings' evidence and fixes in one text, or what the
	// doctor saw when it found nothing.
	Advice string
}

// Queue is what the doctor needs to know of a queue besides its leases.
type Queue struct {
	ID                uint64
	Name              string
	VisibilityTimeout int
	FIFO              bool
	// DeadLetterTarget (an ARN) and MaxReceiveCount are the queue's
	// RedrivePolicy; DeadLetterTarget is empty when it has none.
	DeadLetterTarget string
	MaxReceiveCount  int
	// Sources, if set, lists the queues whose dead-letter queue this one
	// is; the doctor calls it only when it needs to know.
	Sources func() []string
}

// redrivePolicy is a queue's RedrivePolicy, as the doctor names it.
type redrivePolicy struct {
	target          string // dead-letter queue ARN
	maxReceiveCount int
}

// Report diagnoses the queue's leases at now.
func (l *Ledger) Report(q Queue, now time.Time) *LeaseReport {
	total, window := l.snapshot(q.ID, now)
	r := &LeaseReport{
		Queue: q.Name, VisibilityTimeout: q.VisibilityTimeout, FIFO: q.FIFO,
		Window: statsOf(&window), SinceStart: statsOf(&total), HistorySince: l.started,
	}
	judged, jc := r.Window, &window
	if judged.none() {
		judged, jc = r.SinceStart, &total
		r.JudgedSinceStart = true
	}
	d := doctor{r: r, s: judged, now: now}
	since := time.Time{}
	if jc == &window {
		since = now.Add(-windowMinutes * time.Minute)
	}
	if d.s.Late > 0 {
		// Lapsed leases whose holders may yet come back late, as others
		// did, are no evidence that they never will.
		d.pendingWithin = max(judged.LateWorkedMax, time.Duration(r.VisibilityTimeout)*time.Second)
	}
	countedFrom := since // the events the judged counts count happened at or after it
	if !since.IsZero() {
		countedFrom = windowFrom(now)
	}
	if judged.LateLeases > 0 {
		d.lateAsked, d.lateQueue = l.overrunLease(q.ID, now, countedFrom)
		d.overranBy, d.inTimeBy = l.overrunHolders(q.ID, now, countedFrom)
	}
	if r.SinceStart.Finished() >= MinFindingLeases {
		d.renewed, d.stalled, d.unheld = l.heldLeases(q.ID, now, r.SinceStart.P99)
	} else {
		d.oldest = l.oldestRunning(q.ID, now)
	}
	var undecided time.Time // lapses begun after it may yet come back late
	if d.pendingWithin > 0 {
		undecided = now.Add(-d.pendingWithin)
	}
	d.batches = l.failedBatches(q.ID, now, since, undecided)
	d.lapses = l.lapsedHolders(q.ID, now, countedFrom, undecided, d.batches.whole)
	d.loops = l.releaseLoops(q.ID, now, since)
	d.retries = l.retryLoops(q.ID, now, since, d.batches)
	if judged.RefusedRenewals > 0 {
		d.refused = l.refusedLeases(q.ID, now, countedFrom)
	}
	d.redrive = redrivePolicy{target: q.DeadLetterTarget, maxReceiveCount: q.MaxReceiveCount}
	d.hasRedrive = q.DeadLetterTarget != ""
	d.dlqOf = func() []string {
		if d.sources == nil {
			d.sources = []string{}
			if q.Sources != nil {
				d.sources = append(d.sources, q.Sources()...)
			}
		}
		return d.sources
	}
	d.diagnose()
	judgedFrom := since
	if judgedFrom.IsZero() {
		judgedFrom = l.started
	}
	l.withholdOnGap(r, judgedFrom, now)
	return r
}

// History returns the lease events the ledger remembers for a message; ok
// is false when it remembers none.
func (l *Ledger) History(queueID uint64, messageID string, now time.Time) (events []LeaseEvent, ok bool) {
	return l.history(queueID, messageID, now)
}

// Metrics fills in the ledger's figures of m, for the queue queueID at
// now: Totals, LeaseDurations, LeaseSum, OldestLease and HungLeases.
func (l *Ledger) Metrics(queueID uint64, now time.Time, m *QueueMetrics) {
	total := l.owned(queueID, now)
	m.Totals, m.LeaseDurations, m.LeaseSum = statsOf(&total), total.atMost, total.durationSum
	if oldest := l.oldestLease(queueID, now); !oldest.IsZero() {
		m.OldestLease = max(now.Sub(oldest), 0)
	}
	if p99, n := l.completedP99(queueID, now); n >= MinFindingLeases {
		renewed, stalled, _ := l.heldLeases(queueID, now, p99) // unheld: no handler hangs
		for _, h := range stalled {
			if !h.mayBeGivenBack() {
				m.HungLeases++
			}
		}
		for _, h := range renewed {
			if !h.Progress && !h.mayBeGivenBack() {
				m.HungLeases++
			}
		}
	}
}

// QueueMetrics are one queue's figures for /metrics.
type QueueMetrics struct {
	Region, Account, Name      string
	Visible, InFlight, Delayed int
	OldestAge                  time.Duration
	// Totals are the ledger's counts since this node started of what this
	// node originated: the requests it handled and the expiries of the
	// leases it handed out. Other nodes' events are left out, so that
	// summing a counter over the nodes of a cluster counts each event once.
	Totals LeaseStats
	// LeaseDurations counts the leases Totals.Finished counts (receive to
	// delete, refused or not) at or below each of LeaseDurationBounds,
	// exactly; LeaseSum adds them up.
	LeaseDurations [len(LeaseDurationBounds)]uint64
	LeaseSum       time.Duration
	// VisibilityTimeout is the queue's, in seconds.
	VisibilityTimeout int
	// OldestLease is how long the oldest running lease has been held, zero
	// when none runs; HungLeases counts the running leases held far beyond
	// the p99 with no sign of progress (HungLeasesHelp): never renewed
	// since (DiagnosisHeldUnrenewed), or renewed without the holder saying
	// its handler progressed (DiagnosisHeldRenewed); but not those that
	// may be messages given back with a delay (HeldLease.mayBeGivenBack). Both are of every
	// node's leases as far as this node's ledger has seen them.
	OldestLease time.Duration
	HungLeases  int
}
