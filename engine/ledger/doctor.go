package ledger

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/baton-sqs/baton"
)

// Diagnoses of a queue's leases. A report's Diagnosis is its first
// finding's kind, or DiagnosisHealthy, or DiagnosisTooFewLeases when the
// leases hint at a problem too few of them show to name it, or
// DiagnosisNoLeases when the period judged saw no lease at all. The findings'
// texts are made here and nowhere else: `baton doctor`, the dashboard, the
// admin API and `baton proxy` show them as they are.
const (
	DiagnosisHealthy        = "healthy"
	DiagnosisLeaseTooShort  = "lease-too-short"
	DiagnosisHandlerFailing = "handler-failing"
	// DiagnosisHeldUnrenewed: running leases held far beyond the queue's
	// p99 and not renewed since: their holder is gone, or hung without a
	// heartbeat, or (when it went on making requests) its handler failed
	// without deleting or releasing; or the job is far slower than every
	// one that completed.
	DiagnosisHeldUnrenewed = "held-unrenewed"
	// DiagnosisHeldRenewed: running leases held far beyond the p99 and
	// still renewed, with no word that their handler progresses: a long
	// job kept by its heartbeat, or a hung handler kept alive by one.
	DiagnosisHeldRenewed = "held-renewed"
	// DiagnosisLongJob: running leases held far beyond the p99 and renewed
	// because their handler reported progress (Event.Progress).
	DiagnosisLongJob = "long-job"
	// DiagnosisCeilingRefused: renewals the 12-hour ceiling refused.
	DiagnosisCeilingRefused = "ceiling-refused"
	// DiagnosisBatchFailsWhole: messages received together come back
	// together with none completed, again and again, at least one of each
	// receive by a lapse (one whose every message was released with a
	// delay is a retry of each: DiagnosisRetryLoop).
	DiagnosisBatchFailsWhole = "batch-fails-whole"
	// DiagnosisHoldersStopped: leases lapsed and their holders made no
	// request since: they stopped (a deploy or scale-in that did not
	// release, a crash), or still work on them past their lease without
	// a request while they work; the server cannot tell which.
	DiagnosisHoldersStopped = "holders-stopped"
	// DiagnosisInspection: leases taken by a person's tool (the AWS CLI,
	// `baton receive`) left to lapse.
	DiagnosisInspection = "inspection"
	// DiagnosisClientLeft: leases handed out in answers that reached no
	// client, which had left before them (clientleft.go).
	DiagnosisClientLeft = "client-left"
	// DiagnosisStoreFailed: leases whose holder deleted their message in
	// time, the store failing the delete (answered 503, not made), so the
	// lease lapsed and its message could be received again until the
	// retry (unanswered.go).
	DiagnosisStoreFailed  = "store-failed"
	DiagnosisTooFewLeases = "too-few-leases"
	// DiagnosisNoLeases: no lease began, completed or lapsed in the period
	// judged (the node's life, the window being empty): nothing shows the
	// queue's consumers healthy, nor failing. A queue whose messages
	// wait with no consumer reads so, not healthy.
	DiagnosisNoLeases = "no-leases"
	// DiagnosisReleaseLoop: messages released at once ("not ready") again
	// and again, each receive counting toward maxReceiveCount.
	DiagnosisReleaseLoop = "release-loop"
	// DiagnosisRetryLoop: messages released with a delay again and again
	// and never completed: handlers that fail and retry with a back-off,
	// or messages not ready, again and again; no lease lapses.
	DiagnosisRetryLoop = "retry-loop"
	// DiagnosisEvidenceMissed: this node may have missed other nodes'
	// lease events in the period judged (missed.go): it names no finding
	// nor health, and says what it missed instead.
	DiagnosisEvidenceMissed = "evidence-missed"

	renewAdviceSpreadFactor  = 4   // p99 above this many medians: renew rather than lengthen
	recommendedTimeoutFactor = 1.5 // recommended timeout = p99 × this
)

// MinFindingLeases is the fewest leases a finding rests on: below it the
// doctor names no problem, however the leases went. One or two leases that
// lapsed are an operator looking at a message as often as a failing
// handler, and a p99 of one or two durations is no p99.
//
// What a finding rests on: lease-too-short, the leases of the period judged
// (begun, finished or lapsed in it; a delete that found its message already
// deleted, or a late one refused, ends a lease its handler finished), of
// which at least one overran: a late completion proves an overrun, but a
// p99 of two leases is no p99;
// handler-failing, holders-stopped, inspection and client-left, the lapsed
// leases whose holder never came back, since one lapse is as often a consumer stopped or
// a person looking; held-unrenewed, held-renewed and long-job, the
// completed leases whose p99 the held lease is held beyond; release-loop,
// the leases released at once right after their message's lease before
// was; retry-loop, the leases released with a delay, by holders that went
// on, right after their message's two leases before were released, or
// right before its move to the dead-letter queue, the message not
// completed since, and of no batch that failed whole; batch-fails-whole,
// the messages that failed with their whole batch twice in a row, a lease
// of each receive lapsing; ceiling-refused, the refused renewals.
const MinFindingLeases = 3

// Held leases: a running lease is held far beyond the p99 when it has been
// held FarBeyondFactor × the p99 of the queue's completed leases, and at
// least minFarHeld. It is still renewed if its holder renewed it after it
// had been held the p99, else not renewed since. A visibility timeout of
// FarBeyondFactor × what the completed leases need, and at least
// minLongTimeout, is named as the stall a crash causes.
const (
	FarBeyondFactor = 10
	minFarHeld      = 5 * time.Second
	minLongTimeout  = 5 * time.Minute
)

// HungLeasesHelp says what QueueMetrics.HungLeases (the baton_lease_hung
// gauge) counts.
const HungLeasesHelp = "Running leases held more than 10x the p99 of completed leases (and 5 s) with no sign of progress: " +
	"not renewed since (a holder gone, hung without a heartbeat, or failed without releasing), or renewed without word that the handler progressed " +
	"(a long job, or a hung handler behind a heartbeat); but not a lease handed out in an answer that reached no client, which no one holds, nor a lease renewed once whose holder went on making requests without renewing it again: " +
	"a message given back with a delay longer than its lease had left (a retry's back-off) reads so, and a heartbeat shows at its next renewal."

// MaxLeaseTime is the longest a message can stay in flight: SQS limits a
// message's visibility timeout to 12 hours from the receive that leased it
// ("Amazon SQS visibility timeout", Amazon SQS Developer Guide), and so
// does this server (ChangeMessageVisibility).
const MaxLeaseTime = baton.MaxVisibilityTimeout * time.Second

// farHeld is how long a running lease must be held to be held far beyond
// the p99 of the queue's completed leases.
func farHeld(p99 time.Duration) time.Duration {
	return max(FarBeyondFactor*p99, minFarHeld)
}

// doctor judges one report.
type doctor struct {
	r   *LeaseReport
	s   LeaseStats
	now time.Time
	// pendingWithin is how long after their receive lapsed leases whose
	// holders went on (or are not known) may yet come back late, as others
	// did (lapses.pending counts them).
	pendingWithin time.Duration
	// lateAsked and lateQueue are the longest leases that overran, as
	// their holders were given them (overrunLease): of the length a
	// request asked for, and of the queue's VisibilityTimeout of the time.
	lateAsked, lateQueue time.Duration
	// overranBy and inTimeBy are the holders whose leases overran, and
	// the others, whose every lease completed in time (overrunHolders).
	overranBy, inTimeBy []Client
	// renewed and stalled are the running leases held far beyond the p99
	// (heldLeases); oldest, with too few completed leases for a p99, the
	// lease running longest.
	renewed, stalled []HeldLease
	// unheld are the running leases held far beyond the p99 that an
	// answer no client got handed out (clientleft.go).
	unheld  []HeldLease
	oldest  HeldLease
	lapses  lapses
	batches batches
	loops   loops
	retries retries
	refused []HeldLease
	// redrive is the queue's RedrivePolicy, if it has one; dlqOf lists the
	// queues whose dead-letter queue it is (asked only when needed).
	redrive    redrivePolicy
	hasRedrive bool
	dlqOf      func() []string
	sources    []string // dlqOf's answer, once asked
	dlqNoted   bool
	// notes are said when no finding is made; tooFew says one of them is
	// of a problem shown by fewer than MinFindingLeases leases.
	notes  []string
	tooFew bool
}

func (d *doctor) diagnose() {
	r := d.r
	r.RecommendedVisibilityTimeout = r.VisibilityTimeout
	d.heldUnrenewedFinding()
	d.heldRenewedFindings()
	d.ceilingFinding()
	d.tooShortFinding()
	d.batchFinding()
	d.failingFinding()
	d.stoppedFinding()
	d.inspectionFinding()
	d.clientLeftFinding()
	d.storeFailedFinding()
	d.retryLoopFinding()
	d.releaseLoopFinding()
	d.noP99Note()
	if d.s.Duplicates > 0 && !d.has(DiagnosisLeaseTooShort) {
		d.notes = append(d.notes, idempotenceAdvice(d.s.Duplicates))
	}
	if len(r.Findings) > 0 {
		d.lastEvents()
		r.Diagnosis = r.Findings[0].Kind
		parts := make([]string, len(r.Findings))
		for i, f := range r.Findings {
			parts[i] = f.Evidence + " " + f.Fix
		}
		r.Advice = strings.Join(parts, " ")
		return
	}
	r.Diagnosis = DiagnosisHealthy
	if d.s.none() {
		r.Diagnosis = DiagnosisNoLeases
	}
	if len(d.notes) > 0 {
		if d.tooFew {
			r.Diagnosis = DiagnosisTooFewLeases
		}
		r.Advice = strings.Join(d.notes, " ")
		return
	}
	r.Advice = d.healthyAdvice()
}

// lastEvents says of each finding when the latest event it rests on
// happened: a finding stays while its evidence is in the period judged,
// so it tells a cause still at work from one that may have stopped.
func (d *doctor) lastEvents() {
	for i := range d.r.Findings {
		f := &d.r.Findings[i]
		f.Last, f.LastEvent = d.lastEvent(f.Kind)
		if f.Last.IsZero() {
			continue
		}
		f.LastAgo = max(d.now.Sub(f.Last), 0)
		f.LastSeen = fmt.Sprintf("last %s %s ago, at %s", f.LastEvent, FormatDuration(f.LastAgo), f.Last.UTC().Format(time.RFC3339))
	}
}

// lastEvent is the latest event a finding of kind rests on, and what it
// was; zero for the findings on leases running now.
func (d *doctor) lastEvent(kind string) (time.Time, string) {
	switch kind {
	case DiagnosisLeaseTooShort:
		return d.s.LastLate, "late completion"
	case DiagnosisHandlerFailing:
		last := d.lapses.lastFailing
		if !d.has(DiagnosisBatchFailsWhole) {
			last = later(last, d.lapses.lastBatched)
		}
		if last.IsZero() {
			return d.lapses.lastPending, "lapse"
		}
		return last, "lapse"
	case DiagnosisHoldersStopped:
		return d.lapses.lastStopped, "lapse"
	case DiagnosisInspection:
		return d.lapses.lastInspected, "lapse"
	case DiagnosisClientLeft:
		return d.lapses.left.last, "lapse"
	case DiagnosisStoreFailed:
		return d.lapses.storeFailed.last, "lapse"
	case DiagnosisBatchFailsWhole:
		return d.batches.last, "receive of a batch that failed whole"
	case DiagnosisReleaseLoop:
		return d.loops.last, "release at once or dead-letter move"
	case DiagnosisRetryLoop:
		return d.retries.last, "release with a delay"
	case DiagnosisCeilingRefused:
		return d.s.LastRefused, "refused renewal"
	}
	return time.Time{}, ""
}

// healthyAdvice says what the doctor saw when it found nothing.
func (d *doctor) healthyAdvice() string {
	r, s := d.r, d.s
	var advice string
	switch {
	case s.none():
		return "No lease seen yet: nothing to judge."
	case s.Finished() == 0 && s.Untimed == 0:
		return "No lease has completed yet."
	case s.Finished() == 0: // only Untimed: how long they ran is not known
		advice = "No lease lapsed or completed late."
	case s.Renewals > 0 && s.UnrenewedCompleted < s.Finished():
		renewed := s.Finished() - s.UnrenewedCompleted
		advice = fmt.Sprintf("Leases end in time: no lease lapsed or completed late. %d of %d completed leases were renewed (%d renewals) and ran up to %s",
			renewed, s.Finished(), s.Renewals, fmtSeconds(s.Max))
		if s.UnrenewedCompleted > 0 {
			advice += fmt.Sprintf("; those never renewed have p99 %s, within the %ds visibility timeout", fmtSeconds(s.UnrenewedP99), r.VisibilityTimeout)
		}
		advice += "."
	default:
		advice = fmt.Sprintf("Leases end in time: p99 %s within the %ds visibility timeout, no lease lapsed.", fmtSeconds(s.P99), r.VisibilityTimeout)
	}
	if s.Untimed > 0 {
		advice += " " + untimedText(s)
	}
	if stall := d.longTimeout(); stall != "" {
		advice += " " + stall
	}
	return advice
}

// has says a finding of kind was made.
func (d *doctor) has(kind string) bool {
	for _, f := range d.r.Findings {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

// idempotenceAdvice is what the doctor says wherever duplicate executions
// happened.
func idempotenceAdvice(duplicates uint64) string {
	return fmt.Sprintf("Messages ran twice (%d confirmed duplicate executions). Even with the right timeout a message can be delivered again (SQS delivers at least once: "+
		"a crash after the work, a lost delete), so make handlers idempotent: Baton's consumer has an idempotency middleware "+
		"(consumer.Idempotency) and lease epochs (Lease.Epoch), with which a store turns away the writes of a holder whose lease was lost.",
		duplicates)
}

// tooShortFinding names leases that overran their visibility timeout: a
// late completion proves it, since a lease completed in time ran within
// the lease it was given, whatever the queue's timeout now is (a receive
// may ask for a longer lease, the queue's may have been lowered since).
func (d *doctor) tooShortFinding() {
	r, s := d.r, d.s
	if s.LateLeases == 0 {
		d.timeoutBelowP99Note()
		return
	}
	overran := s.LateLeases
	// The leases of the period: those whose handlers finished count, the
	// deletes that deleted nothing included (a late one that found its
	// message already deleted ran twice), as the p99 does.
	leases := max(s.Received, s.Finished(), s.Expired, overran)
	if leases >= MinFindingLeases && d.deadLetterQueue() {
		return
	}
	if leases < MinFindingLeases {
		d.tooFew = true
		d.notes = append(d.notes, fmt.Sprintf("%d of %s overran their lease (%d late completions): too few leases to name a problem (a finding rests on at least %d).",
			overran, plural(int(leases), "lease", "leases"), s.Late, MinFindingLeases))
		return
	}
	// The lease the overruns were against: the queue's timeout, or a
	// shorter one their receives or renewals asked for, or the queue's
	// before it was raised.
	vis := time.Duration(r.VisibilityTimeout) * time.Second
	given := max(d.lateAsked, d.lateQueue)
	lease, shorter := vis, given > 0 && given < vis
	if shorter {
		lease = given
	}
	if s.Finished() == 0 || s.Max <= lease {
		d.tooShortNoP99(leases, overran)
		return
	}
	ev := fmt.Sprintf("Handlers overran their lease (%d of %d leases): %d late completions, %d confirmed duplicate executions, "+
		"%d redeliveries while the holder was still working%s; lease p99 is %s against a visibility timeout of %ds",
		overran, leases, s.Late, s.lateDuplicates(), s.RedeliveriesLapsedWhileWorking, refusedText(s), fmtSeconds(s.P99), r.VisibilityTimeout)
	var fix string
	switch {
	case !shorter:
		ev += "."
		fix = d.tooShortFix(vis)
	case d.lateAsked >= d.lateQueue:
		ev += fmt.Sprintf(", but the leases that overran were given at most %s (the VisibilityTimeout their receive or last renewal asked for), shorter than the queue's %ds.",
			fmtSeconds(lease), r.VisibilityTimeout)
		fix = d.askedFix(lease)
	default:
		ev += fmt.Sprintf(", but the leases that overran were given at most %s, the queue's VisibilityTimeout when they were received: it has been raised to %ds since.",
			fmtSeconds(lease), r.VisibilityTimeout)
		fix = d.raisedFix(lease)
	}
	ev += d.overrunByText()
	if s.Duplicates > 0 {
		fix += " " + idempotenceAdvice(s.Duplicates)
	}
	r.Findings = append(r.Findings, Finding{Kind: DiagnosisLeaseTooShort, Leases: leases, Evidence: ev, Fix: fix})
	d.lateHeartbeats()
}

// overrunByText says, when some holders' leases overran and other
// holders completed every lease in time, which are which, and what that
// fits: two consumers with different handlers on one queue, the slow
// one's leases overrunning, or slow messages that fell to some holders of
// one fleet; "" otherwise.
func (d *doctor) overrunByText() string {
	if len(d.overranBy) == 0 || len(d.inTimeBy) == 0 {
		return ""
	}
	return fmt.Sprintf(" The leases that overran were all held by %s, while %s completed every lease in time: "+
		"either the former run a slower handler (another consumer on the queue: a longer VisibilityTimeout on its receives, or a heartbeat, covers it "+
		"without changing the others' leases), or the slow messages happened to fall to them; the server cannot tell which "+
		"(holders are told apart by address and user agent).",
		clientsText(d.overranBy), clientsText(d.inTimeBy))
}

// refusedText says that deletes deleted nothing: late ones a FIFO queue
// refused (their messages run again), and those that found their message
// already deleted (deleteMarks); their handlers had finished, and the p99
// counts how long they ran.
func refusedText(s LeaseStats) string {
	var text string
	if n := s.RefusedDeletes; n > 0 {
		text += fmt.Sprintf("; %s refused, as a FIFO queue refuses the receipt of a lapsed lease: %s not deleted and %s again",
			either(n == 1, "1 late delete was", fmt.Sprintf("%d late deletes were", n)),
			either(n == 1, "its message was", "their messages were"), either(n == 1, "runs", "run"))
	}
	if n := s.AlreadyDeleted; n > 0 {
		text += fmt.Sprintf("; %s already deleted (by the receiver %s went to after a lapse, or a purge; SQS answers such a delete with success): %s deleted nothing",
			either(n == 1, "1 delete found its message", fmt.Sprintf("%d deletes found their message", n)),
			either(n == 1, "it", "each"), either(n == 1, "it", "they"))
	}
	if text == "" {
		return ""
	}
	n := s.RefusedDeletes + s.AlreadyDeleted
	return text + fmt.Sprintf(", but %s handler had finished, and the p99 counts how long it ran", either(n == 1, "its", "each"))
}

// untimedText says that leases completed at a time the server did not
// see (LeaseStats.Untimed): whether in time is not known, but on a FIFO
// queue, which refuses a late delete (LeaseStats.UntimedInTime).
func untimedText(s LeaseStats) string {
	n, fifo := s.Untimed, min(s.UntimedInTime, s.Untimed)
	text := fmt.Sprintf("%s completed by a delete whose answer was lost (answered 503, and retried) and whose retry came after %s: ",
		either(n == 1, "1 lease was", fmt.Sprintf("%d leases were", n)), either(n == 1, "its lease's end", "their leases' end"))
	switch {
	case fifo == 0:
		text += "whether the delete was made in time the server did not see"
	case fifo == n:
		text += "a FIFO queue refuses a late delete, so the delete was made in time, but when the server did not see"
	default:
		text += fmt.Sprintf("%d of them were made in time (a FIFO queue refuses a late delete), when the server did not see; "+
			"for the others, whether in time the server did not see", fifo)
	}
	return text + fmt.Sprintf(", and %s in no lease duration.", either(n == 1, "it counts", "they count"))
}

// finishedText names the leases a p99 is of (LeaseStats.Finished).
func finishedText(s LeaseStats) string {
	if s.RefusedDeletes+s.AlreadyDeleted == 0 {
		return plural(int(s.timed()), "completed lease", "completed leases")
	}
	parts := []string{fmt.Sprintf("%d completed", s.timed())}
	if s.RefusedDeletes > 0 {
		parts = append(parts, fmt.Sprintf("%d whose late delete was refused", s.RefusedDeletes))
	}
	if s.AlreadyDeleted > 0 {
		parts = append(parts, fmt.Sprintf("%d whose delete found the message already deleted", s.AlreadyDeleted))
	}
	return fmt.Sprintf("%d leases whose handlers finished (%s)", s.Finished(), strings.Join(parts, ", "))
}

// tooShortFix sizes the timeout that overrunning leases need: the p99 ×
// 1.5 when the p99 overran the timeout vis; when it did not, the leases
// that overran are the slowest, beyond the p99, and the figure is the
// longest completed lease × 1.5, beside renewing while the handler works.
func (d *doctor) tooShortFix(vis time.Duration) string {
	r, s := d.r, d.s
	if s.P99 <= vis {
		r.RecommendedVisibilityTimeout = recommendedTimeout(s.Max, r.VisibilityTimeout)
		return fmt.Sprintf("The timeout covers the p99 (%s), but the slowest leases overran it: the longest took %s. "+
			"Either renew the lease while the handler works (ChangeMessageVisibility), so that only the slow ones hold it longer, "+
			"or set VisibilityTimeout to %ds (the longest × %.1f).",
			fmtSeconds(s.P99), fmtSeconds(s.Max), r.RecommendedVisibilityTimeout, recommendedTimeoutFactor)
	}
	r.RecommendedVisibilityTimeout = recommendedTimeout(s.P99, r.VisibilityTimeout)
	fix := fmt.Sprintf("Set VisibilityTimeout to %ds (the p99 × %.1f, not the mean)", r.RecommendedVisibilityTimeout, recommendedTimeoutFactor)
	if s.P50 > 0 && s.P99 > renewAdviceSpreadFactor*s.P50 {
		fix += fmt.Sprintf(", or renew the lease while working (ChangeMessageVisibility): the slowest handlers take more than %d× the median (p50 %s)",
			renewAdviceSpreadFactor, fmtSeconds(s.P50))
	}
	return fix + "."
}

// overrunNeed is what the leases that overran, given at most lease, need:
// the p99 × 1.5, or the longest × 1.5 when the p99 fitted the lease; base
// is the duration it rests on, what names it, need is it in whole seconds.
func (d *doctor) overrunNeed(lease time.Duration) (base time.Duration, what string, need int) {
	base, what = d.s.P99, "the p99"
	if d.s.P99 <= lease {
		base, what = d.s.Max, "the longest"
	}
	return base, what, int(math.Ceil(base.Seconds() * recommendedTimeoutFactor))
}

// askedFix sizes the lease that receives or renewals must ask for when
// the leases that overran were shorter than the queue's timeout (at most
// lease): the p99 × 1.5, or the longest × 1.5 when the p99 fits. The
// queue's timeout is recommended only if it is too short as well.
func (d *doctor) askedFix(lease time.Duration) string {
	r := d.r
	base, what, need := d.overrunNeed(lease)
	fix := fmt.Sprintf("Ask for at least %ds (%s × %.1f) in the VisibilityTimeout of those receives (or of the heartbeat's renewals)",
		need, what, recommendedTimeoutFactor)
	if need <= r.VisibilityTimeout {
		return fix + fmt.Sprintf(", or leave it out for the queue's %ds.", r.VisibilityTimeout)
	}
	r.RecommendedVisibilityTimeout = recommendedTimeout(base, r.VisibilityTimeout)
	return fix + fmt.Sprintf(", and set the queue's VisibilityTimeout to %ds.", r.RecommendedVisibilityTimeout)
}

// raisedFix says whether the queue's timeout, raised since the leases
// that overran were given at most lease, now covers what they need: the
// p99 × 1.5, or the longest × 1.5 when the p99 fitted the lease. If it
// does, the timeout in force is the one recommended.
func (d *doctor) raisedFix(lease time.Duration) string {
	r := d.r
	base, what, need := d.overrunNeed(lease)
	if need <= r.VisibilityTimeout {
		return fmt.Sprintf("The %ds now in force covers them (%s × %.1f is %ds): nothing more to set. "+
			"The finding stays while the leases that overran are in the period judged; one received since that overruns would show the timeout still short.",
			r.VisibilityTimeout, what, recommendedTimeoutFactor, need)
	}
	r.RecommendedVisibilityTimeout = recommendedTimeout(base, r.VisibilityTimeout)
	return fmt.Sprintf("The %ds now in force is still short of them: set VisibilityTimeout to %ds (%s × %.1f).",
		r.VisibilityTimeout, r.RecommendedVisibilityTimeout, what, recommendedTimeoutFactor)
}

// recommendedTimeout is d × 1.5 in whole seconds, more than the timeout in
// force and at most the 12-hour ceiling.
func recommendedTimeout(d time.Duration, current int) int {
	rec := int(math.Ceil(d.Seconds() * recommendedTimeoutFactor))
	return min(max(rec, current+1), baton.MaxVisibilityTimeout)
}

// timeoutBelowP99Note says, when no lease overran, that the leases
// completed without renewal took longer than the timeout now in force:
// they had longer leases (a receive's VisibilityTimeout, the queue's
// before it was lowered), and at this timeout they would overrun.
func (d *doctor) timeoutBelowP99Note() {
	r, s := d.r, d.s
	vis := time.Duration(r.VisibilityTimeout) * time.Second
	if s.UnrenewedCompleted < MinFindingLeases || s.UnrenewedP99 <= vis || d.deadLetterQueue() {
		return
	}
	r.RecommendedVisibilityTimeout = recommendedTimeout(s.UnrenewedP99, r.VisibilityTimeout)
	d.notes = append(d.notes, fmt.Sprintf("Leases end in time: no lease lapsed or completed late. But the leases completed without renewal have p99 %s, "+
		"longer than the %ds visibility timeout now in force: they were received with a longer VisibilityTimeout, or before the queue's was lowered; "+
		"at %ds such leases would overrun. Set VisibilityTimeout to %ds (the p99 × %.1f), or receive with a VisibilityTimeout that covers them.",
		fmtSeconds(s.UnrenewedP99), r.VisibilityTimeout, r.VisibilityTimeout, r.RecommendedVisibilityTimeout, recommendedTimeoutFactor))
}

// tooShortNoP99 names leases that overran when no lease that completed
// shows how long the overrunning handlers take (none completed, or all
// that did completed in time; only late heartbeats came): there is no
// figure to size a timeout from, and how long a late holder was seen
// working grows with every heartbeat of a hung one, so the doctor says
// what is known and recommends no figure.
func (d *doctor) tooShortNoP99(leases, overran uint64) {
	r, s := d.r, d.s
	why := "no lease completed, so there is no p99"
	if s.Finished() > 0 {
		why = fmt.Sprintf("the %s ended within their lease (the longest %s), so none shows how long the others take",
			finishedText(s), fmtSeconds(s.Max))
	}
	ev := fmt.Sprintf("Handlers overran their lease (%d of %d leases): %d late completions, %d confirmed duplicate executions; "+
		"%s: a holder was still working at least %s after its receive, against a visibility timeout of %ds.",
		overran, leases, s.Late, s.lateDuplicates(), why, fmtSeconds(s.LateWorkedMax), r.VisibilityTimeout)
	fix := "Set VisibilityTimeout above what the handlers take when they complete (the doctor gives a figure once overrunning leases complete), " +
		"or renew the lease while the handler makes progress; a handler still working hours later may be hung rather than slow."
	if s.Duplicates > 0 {
		fix += " " + idempotenceAdvice(s.Duplicates)
	}
	r.Findings = append(r.Findings, Finding{Kind: DiagnosisLeaseTooShort, Leases: leases, Evidence: ev, Fix: fix})
	d.lateHeartbeats()
}

// lateHeartbeats adds to the lease-too-short finding just named what its
// late renewals show: holders that renewed, but only after their lease had
// ended (a heartbeat scheduled at the lease's very end, or timed by a
// clock that runs behind or jumps). Such a renewal is answered with
// success, as SQS answers it, and extends nothing: the message had been
// visible since the lease ended, and the holder believes it still holds it.
func (d *doctor) lateHeartbeats() {
	n := d.s.LateRenewals
	if n == 0 {
		return
	}
	f := &d.r.Findings[len(d.r.Findings)-1]
	f.Evidence += fmt.Sprintf(" %s of the late completions %s renewals (ChangeMessageVisibility to a later time) made after the lease had ended: "+
		"a heartbeat that came too late. Answered with success, as SQS answers them, they extended nothing: the message had been visible since the lease ended.",
		either(n == 1, "1", fmt.Sprint(n)), either(n == 1, "was", "were"))
	f.Fix += " The heartbeat renews too late: renew well before the lease ends (at half of the timeout or sooner), timed by a monotonic clock, not a wall clock that may run behind or jump."
}

// failingFinding names lapsed leases whose holder has not come back. Those
// that lapsed with the whole batch they were received in are the
// batch-fails-whole finding's once it is named; until then they are said
// here, with both readings.
func (d *doctor) failingFinding() {
	r, s := d.r, d.s
	gone := s.Expired - min(s.Expired, s.LapsedReturned)
	pending := min(gone, d.lapses.pending)
	gone -= pending
	// Those left by holders that stopped, by a person's look, by a
	// client gone before its answer came or by the store failing a delete
	// made in time, and those whose holder may yet be seen, are not a
	// handler's failure.
	others := d.lapses.inspected + d.lapses.stopped + d.lapses.waiting - d.lapses.shortened + d.lapses.left.n + d.lapses.storeFailed.n // lapses, no releases
	gone -= min(gone, others)
	d.pendingText(min(pending, s.Expired-min(s.Expired, s.LapsedReturned+others)))
	batched := min(d.lapses.batched, gone)
	retried, givenBack := d.lapses.retried+d.lapses.retriedBatched, d.lapses.givenBack+d.lapses.givenBackBatched
	again := d.lapses.receivedAgain + d.lapses.receivedAgainBatched
	if d.has(DiagnosisBatchFailsWhole) {
		gone, batched, retried, givenBack, again = gone-batched, 0, d.lapses.retried, d.lapses.givenBack, d.lapses.receivedAgain
	}
	retried, givenBack, again = min(retried, gone), min(givenBack, gone), min(again, gone)
	if gone == 0 {
		return
	}
	if gone < MinFindingLeases {
		d.tooFew = true
		d.notes = append(d.notes, fmt.Sprintf("%s lapsed and their holders have not come back for them: too few to name a problem (a finding rests on at least %d leases).",
			plural(int(gone), "lease", "leases"), MinFindingLeases))
		return
	}
	if d.deadLetterQueue() {
		return
	}
	ev := fmt.Sprintf("%d leases lapsed and their holders have not come back with a late completion", gone)
	if again > 0 {
		ev += fmt.Sprintf(" (%d of them received again since, by whichever consumer)", again)
	}
	ev += d.failingCause(gone, retried) + givenBackText(givenBack, gone) + d.backOffsPastText(givenBack) + batchedText(batched, gone)
	fix := d.failingFix(failingReadings{maySlow: retried < gone, batched: batched > 0, givenBack: givenBack > 0, shared: d.sharedHolders()})
	r.Findings = append(r.Findings, Finding{Kind: DiagnosisHandlerFailing, Leases: gone, Evidence: ev, Fix: fix})
}

// failingReadings are the readings of handler-failing's lapses besides a
// handler that fails: maySlow, holders that may still be working; batched,
// lapses with their whole batch (batchedText); givenBack, messages given
// back with a back-off (givenBackText); shared, a consumer that stopped
// beside another with its address and user agent (sharedHolderText).
type failingReadings struct {
	maySlow, batched, givenBack, shared bool
}

// failingFix is the fix of handler-failing: the consumers' errors; a
// longer lease or a heartbeat if the holders may still be working; partial
// batch responses if lapses came with their whole batch; releasing on a
// stop if a consumer may have stopped beside another on its host.
func (d *doctor) failingFix(rd failingReadings) string {
	fix := "Look at the consumers' errors: a handler that throws before DeleteMessage leaves the message to lapse and run again."
	if rd.givenBack {
		fix += " So does a consumer that gives it back with a back-off longer than its lease has left: " +
			"then look at why those handlers failed, or why their messages were not ready."
	}
	if rd.shared {
		fix += " If a consumer stopped while another on its host went on, those messages were stranded, not failed: " + releaseOnStop + "."
	}
	if rd.maySlow {
		fix += " If they are still working, the timeout is shorter than their handlers take: renew the lease while the handler works " +
			"(ChangeMessageVisibility), or set VisibilityTimeout above what the handlers take."
	}
	if rd.batched {
		fix += " If the consumer fails a batch whole when one of its messages fails, " + partialBatchAdvice
	}
	if d.hasRedrive {
		return fix + fmt.Sprintf(" The RedrivePolicy moves a message to %s after %d receives.", arnQueueName(d.redrive.target), d.redrive.maxReceiveCount)
	}
	return fix + " A RedrivePolicy stops a poison message from cycling."
}

// failingCause says why gone leases lapsed with their holders not back.
// A lapse of a lease taken before this server started has no known
// holder: a crashed consumer leaves the same. The handlers are said to
// fail only on as many lapses of known holders as a finding rests on.
func (d *doctor) failingCause(gone, retried uint64) string {
	switch seeded := min(d.lapses.seeded, gone); {
	case seeded > 0 && gone-seeded < MinFindingLeases:
		which := either(gone == 1, "it was", "all were")
		if seeded < gone {
			which = fmt.Sprintf("%d of them were", seeded)
		}
		return fmt.Sprintf(": %s leased before this server started, by holders not known: handlers that fail before DeleteMessage, "+
			"consumers that crashed or stopped without releasing, or holders still working on them past their lease "+
			"(a handler slower than the visibility timeout: its late delete would show it); the server cannot tell which.", which)
	case seeded > 0:
		return fmt.Sprintf(" (%d of them leased before this server started, by holders not known: a consumer that crashed or stopped without releasing "+
			"leaves the same lapse)", seeded) + failingOrSlow(gone, retried)
	}
	alive := ""
	if d.lapses.alive >= gone {
		alive = ", and went on making requests on the queue afterward"
	}
	return alive + failingOrSlow(gone, retried) + sharedHolderText(d.sharedHolders())
}

// sharedHolders says that some of the lapses toward handler-failing are
// of holders seen making requests after them: seen by address and user
// agent, which another consumer on the same host with the same SDK shares,
// unless the very process that held the lease went on: it made a request
// by the receipt of another message of the same receive at the lapse or
// after it (lapses.wentOnItself), so it had not stopped.
func (d *doctor) sharedHolders() bool { return d.lapses.alive > d.lapses.wentOnItself }

// sharedHolderText says, if shared, that a holder seen going on may have
// been another consumer with its address and user agent, and the one that
// held the leases stopped without releasing them.
func sharedHolderText(shared bool) string {
	if !shared {
		return ""
	}
	return " Holders are told apart by address and user agent only, so the same lapses come of a consumer that stopped without releasing them " +
		"while another with the same address and user agent went on (a deploy on one host, or a crash and a restart there): " +
		"the server cannot tell that from a failing handler."
}

// failingOrSlow says the gone lapsed leases' handlers are failing, not
// slow, when each of their messages was completed in time once received
// again (retried of them were); the others' holders may as well still be
// working past their lease, if they poll while they work, until their
// late delete comes: both are said.
func failingOrSlow(gone, retried uint64) string {
	const failing = ": the handlers are failing (an error path or a crash before DeleteMessage)"
	if retried >= gone {
		return failing + ", not slow: each message was completed in time once received again."
	}
	which := "their holders"
	if retried > 0 {
		which = fmt.Sprintf("the holders of the %d whose messages have not been completed since", gone-retried)
	}
	return failing + fmt.Sprintf(", or %s are still working past their lease (a handler slower than the visibility timeout, "+
		"in a consumer that polls while it works: its late delete would show it); the server cannot tell which yet.", which)
}

// givenBackText says that n of the gone lapsed leases lapsed at the end
// their holder's last renewal set, their holders going on without
// renewing again (givenBackLapse): a message given back with a delay
// longer than its lease had left reads so; the server cannot tell it from
// a handler that failed after its lease was renewed.
func givenBackText(n, gone uint64) string {
	if n == 0 {
		return ""
	}
	which := either(n == gone, "All of them", fmt.Sprintf("%d of them", n))
	return fmt.Sprintf(" %s lapsed at the end their holder's last renewal had set, and their holders went on making requests without renewing again: "+
		"a holder that gave its message back with a delay longer than its lease had left (a retry's back-off, or not ready: "+
		"ChangeMessageVisibility past the lease's end reads as a renewal) leaves the same lapse, its message coming back at the end it set; "+
		"the server cannot tell that from a handler that failed after its lease was renewed.", which)
}

// batchedText says that n of the gone lapsed leases lapsed with every
// other message of the receive that handed them out: each failing, or one
// failing message taking its batch with it, leave the same lapses.
func batchedText(n, gone uint64) string {
	if n == 0 {
		return ""
	}
	which := either(n == gone, "All of them", fmt.Sprintf("%d of them", n))
	return fmt.Sprintf(" %s lapsed with every other message of the receive that handed them out, none of which completed: "+
		"either each of those messages fails, or one failing message takes its batch with it (a consumer that fails a batch whole); "+
		"the server cannot tell which.", which)
}

// partialBatchAdvice is the fix for a consumer that fails a batch whole.
const partialBatchAdvice = "report partial batch responses (ReportBatchItemFailures: `baton worker --report-batch-item-failures`, " +
	"a function's batchItemFailures), or delete each message as it succeeds."

// pendingText says that n lapsed leases have not come back yet though
// their holders may, as others came back late: slow handlers if they do,
// failing ones if not. It is said in the lease-too-short finding, which
// such lapses must not be left out of, or as a note of too few leases.
func (d *doctor) pendingText(n uint64) {
	if n == 0 || len(d.dlqOf()) > 0 {
		return
	}
	text := fmt.Sprintf("%s received in the last %s lapsed and %s not come back yet: slow like those that came back late if %s, "+
		"failing before DeleteMessage if not (a longer timeout would not help those); the doctor tells which once %s has passed since %s receive.",
		plural(int(n), "lease", "leases"), FormatDuration(d.pendingWithin), either(n == 1, "its holder has", "their holders have"),
		either(n == 1, "it does", "they do"), FormatDuration(d.pendingWithin), either(n == 1, "its", "their"))
	for i := range d.r.Findings {
		if f := &d.r.Findings[i]; f.Kind == DiagnosisLeaseTooShort {
			f.Evidence += " " + text
			return
		}
	}
	d.tooFew = true
	d.notes = append(d.notes, text)
}

// releaseLoopFinding names messages given straight back again and again:
// a handler that is "not ready" and releases the message at once has it
// received at once by the next poll, in a loop that costs a receive each
// time and, with a RedrivePolicy, dead-letters the message after
// maxReceiveCount of them, though no lease lapsed. A receive with
// VisibilityTimeout 0 counts toward maxReceiveCount as well: one right
// before the move is named with the releases.
func (d *doctor) releaseLoopFinding() {
	n := d.loops.leases
	if n == 0 {
		return
	}
	what := loopText(d.loops)
	if n < MinFindingLeases {
		d.tooFew = true
		d.notes = append(d.notes, fmt.Sprintf("%s: too few to name a problem (a finding rests on at least %d leases).", what, MinFindingLeases))
		return
	}
	ev := what + ": messages go round receivers that give them straight back, and every receive counts "
	if d.hasRedrive {
		ev += fmt.Sprintf("toward the RedrivePolicy's maxReceiveCount (%d).", d.redrive.maxReceiveCount)
	} else {
		ev += "in the message's ApproximateReceiveCount (the queue has no RedrivePolicy: with one, toward its maxReceiveCount)."
	}
	fix := "Release with a delay instead (ChangeMessageVisibility to a back-off of some seconds, longer each receive), so the message comes back when it may be ready"
	if d.r.FIFO {
		fix = "On a FIFO queue a consumer releases the messages behind one that failed in their group, to keep their order " +
			"(Baton's consumer does, at once on a queue without a RedrivePolicy): if so, the loop is that message's, and releasing them with a delay would not help; " +
			"if not, release with a delay (ChangeMessageVisibility to a back-off of some seconds, longer each receive), so the message comes back when it may be ready"
	}
	if d.hasRedrive {
		mrc := d.redrive.maxReceiveCount
		fix += fmt.Sprintf("; as it is, a message is moved to %s after %s that %sgave it straight back, with no lease of it lapsed "+
			"(whether its handler was not ready or failed at once, the server cannot see)",
			arnQueueName(d.redrive.target), plural(mrc, "receive", "receives"), either(mrc == 1, "", "each "))
	}
	d.r.Findings = append(d.r.Findings, Finding{Kind: DiagnosisReleaseLoop, Leases: n, Evidence: ev, Fix: fix + "."})
}

// loopText says what the leases of a release loop were.
func loopText(l loops) string {
	var parts []string
	if l.rereleased > 0 {
		parts = append(parts, fmt.Sprintf("%s released at once (ChangeMessageVisibility 0) right after the message's lease before had been, by holders that went on making requests",
			either(l.rereleased == 1, "1 lease was", fmt.Sprintf("%d leases were", l.rereleased))))
	}
	if l.dead > 0 {
		parts = append(parts, fmt.Sprintf("%s moved to the dead-letter queue at the receive right after one that gave %s straight back "+
			"(released at once, or received with VisibilityTimeout 0)",
			either(l.dead == 1, "1 message was", fmt.Sprintf("%d messages were", l.dead)),
			either(l.dead == 1, "it", "them")))
	}
	return strings.Join(parts, "; ")
}

// deadLetterQueue says whether the queue is another's dead-letter queue,
// noting once that its leases judge no handler: whoever receives from a
// dead-letter queue is most often a person looking at what failed, who lets
// the lease lapse or deletes when done reading. Redrive moves messages out
// without leasing them.
func (d *doctor) deadLetterQueue() bool {
	sources := d.dlqOf()
	if len(sources) == 0 {
		return false
	}
	if !d.dlqNoted {
		d.dlqNoted = true
		d.notes = append(d.notes, fmt.Sprintf("This is the dead-letter queue of %s: its leases lapsing or ending late are how a look at a dead-lettered message goes (%d lapsed, %d late completions); no handler or timeout is judged here.",
			strings.Join(sources, ", "), d.s.Expired, d.s.Late))
	}
	return true
}

func arnQueueName(arn string) string { return arn[strings.LastIndexByte(arn, ':')+1:] }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// FormatDuration is d in hours, minutes and seconds, rounded to the
// second: the one rule for every duration the doctor shows, `baton
// doctor`'s lease lines included, so that two shown together agree.
func FormatDuration(d time.Duration) string {
	return d.Round(time.Second).String()
}

// fmtSeconds is d in seconds to a tenth, or in milliseconds below 0.1 s.
func fmtSeconds(d time.Duration) string {
	if d > 0 && d < 100*time.Millisecond {
		return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}
