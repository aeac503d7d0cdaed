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
// leases hint at a problem too few of them show to name it.
const (
	DiagnosisHealthy        = "healthy"
	DiagnosisLeaseTooShort  = "lease-too-short"
	DiagnosisHandlerFailing = "handler-failing"
	// DiagnosisHungHandler: a lease held far beyond the queue's p99 and
	// still renewed, as a heartbeat keeps a hung handler's lease alive.
	DiagnosisHungHandler  = "hung-handler"
	DiagnosisTooFewLeases = "too-few-leases"
	// DiagnosisReleaseLoop: messages released at once ("not ready") again
	// and again, each receive counting toward maxReceiveCount.
	DiagnosisReleaseLoop = "release-loop"

	renewAdviceSpreadFactor  = 4   // p99 above this many medians: renew rather than lengthen
	recommendedTimeoutFactor = 1.5 // recommended timeout = p99 × this
)

// MinFindingLeases is the fewest leases a finding rests on: below it the
// doctor names no problem, however the leases went. One or two leases that
// lapsed are an operator looking at a message as often as a failing
// handler, and a p99 of one or two durations is no p99.
//
// What a finding rests on: lease-too-short, the leases of the period judged
// (begun, completed or lapsed in it), of which at least one overran: a late
// completion proves an overrun, but a p99 of two leases is no p99;
// handler-failing, the lapsed leases whose holder never came back, since
// one lapse is as often a consumer stopped or a person looking; hung-handler,
// the completed leases whose p99 the hung lease is held beyond; release-loop,
// the leases released at once right after their message's lease before was.
const MinFindingLeases = 3

// Hung leases: a running lease is hung when it has been held more than
// HungLeaseFactor × the p99 of the queue's completed leases (and at least
// minHungHeld), has been renewed at least minHungRenewals times, and was
// renewed after it had been held the p99: its holder's heartbeat kept it
// going past the time the work takes.
const (
	HungLeaseFactor = 4
	minHungHeld     = time.Minute
	minHungRenewals = 2
)

// MaxLeaseTime is the longest a message can stay in flight: SQS limits a
// message's visibility timeout to 12 hours from the receive that leased it
// ("Amazon SQS visibility timeout", Amazon SQS Developer Guide), and so
// does this server (ChangeMessageVisibility).
const MaxLeaseTime = baton.MaxVisibilityTimeout * time.Second

// hungThreshold is how long a lease must be held to be hung, given the
// p99 of the queue's completed leases.
func hungThreshold(p99 time.Duration) time.Duration {
	return max(HungLeaseFactor*p99, minHungHeld)
}

// doctor judges one report.
type doctor struct {
	r       *LeaseReport
	s       LeaseStats
	now     time.Time
	pending uint64
	// overran counts the judged leases never renewed that completed after
	// the visibility timeout.
	overran uint64
	hung    []HungLease
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
	r, s := d.r, d.s
	r.RecommendedVisibilityTimeout = r.VisibilityTimeout
	d.hungFinding()
	d.tooShortFinding()
	d.failingFinding()
	d.releaseLoopFinding()
	if len(r.Findings) > 0 {
		r.Diagnosis = r.Findings[0].Kind
		parts := make([]string, len(r.Findings))
		for i, f := range r.Findings {
			parts[i] = f.Evidence + " " + f.Fix
		}
		r.Advice = strings.Join(parts, " ")
		return
	}
	r.Diagnosis = DiagnosisHealthy
	if len(d.notes) > 0 {
		if d.tooFew {
			r.Diagnosis = DiagnosisTooFewLeases
		}
		r.Advice = strings.Join(d.notes, " ")
		return
	}
	switch {
	case s.Completed == 0:
		r.Advice = "No lease has completed yet."
	case s.Renewals > 0 && s.UnrenewedCompleted < s.Completed:
		renewed := s.Completed - s.UnrenewedCompleted
		r.Advice = fmt.Sprintf("Leases end in time: no lease lapsed or completed late. %d of %d completed leases were renewed (%d renewals) and ran up to %s",
			renewed, s.Completed, s.Renewals, fmtSeconds(s.Max))
		if s.UnrenewedCompleted > 0 {
			r.Advice += fmt.Sprintf("; those never renewed have p99 %s, within the %ds visibility timeout", fmtSeconds(s.UnrenewedP99), r.VisibilityTimeout)
		}
		r.Advice += "."
	default:
		r.Advice = fmt.Sprintf("Leases end in time: p99 %s within the %ds visibility timeout, no lease lapsed.", fmtSeconds(s.P99), r.VisibilityTimeout)
	}
}

// hungFinding names the leases held far beyond the p99 and still renewed.
func (d *doctor) hungFinding() {
	if len(d.hung) == 0 {
		return
	}
	r, all := d.r, d.r.SinceStart
	h := d.hung[0]
	ev := fmt.Sprintf("%s held far beyond the queue's p99 and still being renewed: message %s has been held %s "+
		"(p99 of %d completed leases: %s) and renewed %d times, last %s ago.",
		plural(len(d.hung), "lease", "leases"), h.MessageID, fmtDuration(h.Held), all.Completed, fmtSeconds(all.P99), h.Renewals, fmtDuration(d.now.Sub(h.LastRenewal)))
	fix := fmt.Sprintf("A heartbeat is keeping a hung handler's lease alive: you have traded duplicates for a stall. "+
		"Renew only while the handler makes progress (tie the heartbeat to the work, and give up after a deadline); "+
		"the lease cannot outlast %s after its receive: message %s reaches that ceiling in %s and is then redelivered anyway.",
		fmtDuration(MaxLeaseTime), h.MessageID, fmtDuration(h.CeilingIn))
	r.Findings = append(r.Findings, Finding{Kind: DiagnosisHungHandler, Leases: all.Completed, Evidence: ev, Fix: fix, Hung: d.hung})
}

// tooShortFinding names leases that overran their visibility timeout.
func (d *doctor) tooShortFinding() {
	r, s := d.r, d.s
	vis := time.Duration(r.VisibilityTimeout) * time.Second
	if s.LateLeases == 0 && s.UnrenewedP99 <= vis {
		return
	}
	overran := max(s.LateLeases, d.overran)
	leases := max(s.Received, s.Completed, s.Expired, overran)
	if leases >= MinFindingLeases && d.deadLetterQueue() {
		return
	}
	if leases < MinFindingLeases {
		d.tooFew = true
		d.notes = append(d.notes, fmt.Sprintf("%d of %s overran the %ds visibility timeout (%d late completions): too few leases to name a problem (a finding rests on at least %d).",
			overran, plural(int(leases), "lease", "leases"), r.VisibilityTimeout, s.Late, MinFindingLeases))
		return
	}
	// With no lease completed (only late heartbeats), how long a late
	// holder was seen working is all that tells the handlers' time.
	need, seen := s.P99, "lease p99 is "+fmtSeconds(s.P99)
	if s.Completed == 0 {
		need, seen = s.LateWorkedMax, "no lease completed, but a holder was still working "+fmtSeconds(s.LateWorkedMax)+" after its receive"
	}
	rec := int(math.Ceil(need.Seconds() * recommendedTimeoutFactor))
	r.RecommendedVisibilityTimeout = min(max(rec, r.VisibilityTimeout+1), baton.MaxVisibilityTimeout)
	ev := fmt.Sprintf("Handlers overran their lease (%d of %d leases): %d late completions, %d confirmed duplicate executions, "+
		"%d redeliveries while the holder was still working; %s against a visibility timeout of %ds.",
		overran, leases, s.Late, s.Duplicates, s.RedeliveriesLapsedWhileWorking, seen, r.VisibilityTimeout)
	fix := fmt.Sprintf("Set VisibilityTimeout to %ds (the p99 × %.1f, not the mean)", r.RecommendedVisibilityTimeout, recommendedTimeoutFactor)
	if s.P50 > 0 && s.P99 > renewAdviceSpreadFactor*s.P50 {
		fix += fmt.Sprintf(", or renew the lease while working (ChangeMessageVisibility): the slowest handlers take more than %d× the median (p50 %s)",
			renewAdviceSpreadFactor, fmtSeconds(s.P50))
	}
	r.Findings = append(r.Findings, Finding{Kind: DiagnosisLeaseTooShort, Leases: leases, Evidence: ev, Fix: fix + "."})
}

// failingFinding names lapsed leases whose holder never came back.
func (d *doctor) failingFinding() {
	r, s := d.r, d.s
	gone := s.Expired - min(s.Expired, s.LapsedReturned)
	gone -= min(gone, d.pending)
	if gone == 0 {
		return
	}
	if gone < MinFindingLeases {
		d.tooFew = true
		d.notes = append(d.notes, fmt.Sprintf("%s lapsed with no sign of their holder: too few to name a problem (a finding rests on at least %d leases).",
			plural(int(gone), "lease", "leases"), MinFindingLeases))
		return
	}
	if d.deadLetterQueue() {
		return
	}
	ev := fmt.Sprintf("%d leases lapsed and their holder never came back with a late completion", gone)
	if s.RedeliveriesNeverReturned > 0 {
		ev += fmt.Sprintf(" (%d redelivered to another receiver since)", s.RedeliveriesNeverReturned)
	}
	ev += ": the handlers are failing (an error path or a crash before DeleteMessage), not slow."
	fix := "Look at the consumers' errors: a handler that throws before DeleteMessage leaves the message to lapse and run again."
	if d.hasRedrive {
		fix += fmt.Sprintf(" The RedrivePolicy moves a message to %s after %d receives.", arnQueueName(d.redrive.target), d.redrive.maxReceiveCount)
	} else {
		fix += " A RedrivePolicy stops a poison message from cycling."
	}
	r.Findings = append(r.Findings, Finding{Kind: DiagnosisHandlerFailing, Leases: gone, Evidence: ev, Fix: fix})
}

// releaseLoopFinding names messages released at once again and again: a
// handler that is "not ready" and gives the message straight back has it
// received at once by the next poll, in a loop that costs a receive each
// time and, with a RedrivePolicy, dead-letters the message after
// maxReceiveCount of them, though nothing failed.
func (d *doctor) releaseLoopFinding() {
	s := d.s
	if s.Rereleased < MinFindingLeases {
		return
	}
	ev := fmt.Sprintf("%d leases were released at once (ChangeMessageVisibility 0) right after the message's lease before had been: "+
		"messages go round receivers that give them straight back, and every receive counts toward maxReceiveCount.", s.Rereleased)
	fix := "Release with a delay instead (ChangeMessageVisibility to a back-off of some seconds, longer each receive), so the message comes back when it may be ready"
	if d.hasRedrive {
		fix += fmt.Sprintf("; as it is, a message released %d times in a row is moved to %s without having failed", d.redrive.maxReceiveCount, arnQueueName(d.redrive.target))
	}
	d.r.Findings = append(d.r.Findings, Finding{Kind: DiagnosisReleaseLoop, Leases: s.Rereleased, Evidence: ev, Fix: fix + "."})
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

// fmtDuration is d in hours, minutes and seconds.
func fmtDuration(d time.Duration) string {
	return d.Round(time.Second).String()
}

func fmtSeconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}
