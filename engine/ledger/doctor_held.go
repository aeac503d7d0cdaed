package ledger

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The doctor's findings on leases held long: running leases held far
// beyond the p99 of those that completed, renewed or not; renewals the
// 12-hour ceiling refused; a visibility timeout many times what the
// completed leases need; and, with no p99, what is known.

// heldUnrenewedFinding names the running leases held far beyond the p99
// and not renewed since: their holder crashed, was killed or stopped
// without releasing, or hangs without a heartbeat, or (a holder that went
// on making requests) its handler failed without deleting or releasing;
// each comes back only when its lease ends.
func (d *doctor) heldUnrenewedFinding() {
	if len(d.stalled) == 0 {
		return
	}
	r, all := d.r, d.r.SinceStart
	h := d.stalled[0]
	who := fmt.Sprintf("message %s has been held %s", h.MessageID, FormatDuration(h.Held))
	if len(d.stalled) > 1 {
		who = fmt.Sprintf("messages %s, the longest held %s", heldIDs(d.stalled), FormatDuration(h.Held))
	}
	who += seededText(d.stalled)
	ev := fmt.Sprintf("%s held far beyond the queue's p99 and not renewed since: %s, %s the p99 of %s (%s), %s; %s",
		plural(len(d.stalled), "lease", "leases"), who, times(h.Held, all.P99), finishedText(all), fmtSeconds(all.P99), renewedSince(h), comeBack(d.stalled, d.now))
	fix := heldReadings(d.stalled, d.now)
	if back := givenBackReading(d.stalled, "another reading"); back != "" {
		fix += " " + strings.TrimSpace(back)
	}
	if stall := d.longTimeout(); stall != "" {
		fix += " " + stall
	} else {
		fix += " Renew the lease while the handler makes progress (a heartbeat tied to the work), so that a holder that dies is found out soon."
	}
	ev += d.groupHeldText(d.stalled)
	r.Findings = append(r.Findings, Finding{Kind: DiagnosisHeldUnrenewed, Leases: all.Finished(), Evidence: ev, Fix: fix, Held: d.stalled})
}

// heldReadings says what can keep leases held unrenewed, by what their
// holders did since they received them: a holder that went on making
// requests on the queue is not gone, and a handler that failed without
// deleting or releasing leaves its lease to run out as a hung one does.
// Holders are told apart by address and user agent (holders.go), so the
// reading says that another consumer sharing both would look the same.
func heldReadings(hs []HeldLease, now time.Time) string {
	var known []HeldLease
	for _, h := range hs {
		if !h.Seeded {
			known = append(known, h)
		}
	}
	if len(known) == len(hs) {
		return knownReadings(hs, now)
	}
	unknown := fmt.Sprintf("%s leased before this server started %s not known: ",
		either(len(hs)-len(known) == 1, "The holder of the lease", "The holders of the leases"), either(len(hs)-len(known) == 1, "is", "are")) +
		"a consumer that crashed or stopped without releasing (its leases run on through a restart), one hung without a heartbeat, " +
		"or jobs far slower than every one that completed; the server cannot tell which."
	if len(known) == 0 {
		return unknown
	}
	return "Of the leases begun since: " + knownReadings(known, now) + " " + unknown
}

// seededText says which of hs were leased before this server started,
// whose holder is not known; "" if none.
func seededText(hs []HeldLease) string {
	n := 0
	for _, h := range hs {
		if h.Seeded {
			n++
		}
	}
	switch {
	case n == 0:
		return ""
	case len(hs) == 1:
		return " (leased before this server started; its holder is not known)"
	case n == len(hs):
		return " (all leased before this server started; their holders are not known)"
	}
	return fmt.Sprintf(" (%d of them leased before this server started; their holders are not known)", n)
}

// knownReadings is heldReadings for leases whose holders the ledger saw
// receive them.
func knownReadings(hs []HeldLease, now time.Time) string {
	const slower = "or these jobs are far slower than every one that completed."
	const live = "failed without deleting or releasing the message (an error path), or hung without a heartbeat; "
	var seen int
	last := time.Time{}
	for _, h := range hs {
		if !h.HolderSeen.IsZero() {
			seen++
			last = later(last, h.HolderSeen)
		}
	}
	switch {
	case seen == 0:
		return "Their holder is gone (crashed, killed, or stopped without releasing) or hung without a heartbeat; " + slower
	case seen == len(hs):
		return fmt.Sprintf("%s went on making requests on the queue since it received %s (the last %s ago): it is not gone, "+
			"unless another consumer shares its address and user agent; its handler ",
			either(len(hs) == 1, "Its holder", "Their holder"), either(len(hs) == 1, "it", "them"), FormatDuration(now.Sub(last))) + live + slower
	}
	return fmt.Sprintf("The holders of %d of them went on making requests on the queue since they received them (the last %s ago): "+
		"not gone (unless other consumers share their address and user agent), their handlers ", seen, FormatDuration(now.Sub(last))) + live +
		"the others' holders made no request since: gone (crashed, killed, or stopped without releasing) or hung whole; " + slower
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// heldRenewedFindings names the running leases held far beyond the p99
// and still renewed: those renewed on their handler's progress are long
// jobs at work; for the others the server cannot tell a long job from a
// hung handler behind a heartbeat, and says both.
func (d *doctor) heldRenewedFindings() {
	var blind, progress []HeldLease
	for _, h := range d.renewed {
		if h.Progress {
			progress = append(progress, h)
		} else {
			blind = append(blind, h)
		}
	}
	all := d.r.SinceStart
	if len(blind) > 0 {
		ev := d.heldRenewedText(blind, "and still renewed", "with no word that its handler progressed")
		fix := heldRenewedReadings(blind) +
			"Renew only while the handler makes progress: tie the heartbeat to the work and give up after a deadline " +
			"(Baton's consumer renews on Delivery.Progress and tells the server so). " + ceilingText(blind[0])
		d.r.Findings = append(d.r.Findings, Finding{Kind: DiagnosisHeldRenewed, Leases: all.Finished(), Evidence: ev, Fix: fix, Held: blind})
	}
	if len(progress) > 0 {
		ev := d.heldRenewedText(progress, "and renewed on its handler's progress", "each time because its handler reported progress (its consumer says so)")
		fix := "A long job at work, not a hung one: nothing to fix if jobs like it take this long. " + ceilingText(progress[0])
		d.r.Findings = append(d.r.Findings, Finding{Kind: DiagnosisLongJob, Leases: all.Finished(), Evidence: ev, Fix: fix, Held: progress})
	}
}

// heldRenewedReadings says what renewed leases held far beyond the p99,
// with no word of progress, may be: a long job, or a hung handler behind a
// heartbeat; and, for those renewed once, a message given back with a
// delay (givenBackReading).
func heldRenewedReadings(hs []HeldLease) string {
	const two = "a long job kept by its heartbeat, or a hung handler kept alive by a heartbeat that renews whatever the handler does (duplicates traded for a stall). "
	return "The server cannot see the handler, and this fits two readings: " + two + givenBackReading(hs, "a third")
}

// givenBackReading says, of the leases of hs renewed once, that their
// holder may have given the message back with a delay longer than its
// lease had left (a retry's back-off), which the server cannot tell from
// a renewal (changed); "" if none was renewed once.
func givenBackReading(hs []HeldLease, which string) string {
	once := 0
	for _, h := range hs {
		if h.Renewals == 1 {
			once++
		}
	}
	if once == 0 {
		return ""
	}
	them := either(once == len(hs), "them", fmt.Sprintf("the %d renewed once", once))
	return fmt.Sprintf("For %s, %s: a holder that gave the message back with a delay longer than its lease had left "+
		"(a retry's back-off, or not ready: ChangeMessageVisibility past the lease's end reads as a renewal), and it comes back at that end. ", them, which)
}

// heldRenewedText is the evidence of renewed leases held far beyond the
// p99: how they were renewed, and what is known of why.
func (d *doctor) heldRenewedText(hs []HeldLease, renewed, why string) string {
	all, h := d.r.SinceStart, hs[0]
	return fmt.Sprintf("%s held far beyond the queue's p99 %s: message %s has been held %s (%s the p99 of %s, %s) "+
		"and renewed %s, last %s ago, %s.",
		plural(len(hs), "lease", "leases"), renewed, h.MessageID, FormatDuration(h.Held), times(h.Held, all.P99), finishedText(all), fmtSeconds(all.P99),
		plural(h.Renewals, "time", "times"), FormatDuration(d.now.Sub(h.LastRenewal)), why) + d.groupHeldText(hs)
}

// groupHeldText says, on a FIFO queue, that each of hs holds back the rest
// of its message group: a message in flight blocks the delivery of the
// others of its group (as on SQS), so they wait until its lease ends; ""
// on a standard queue.
func (d *doctor) groupHeldText(hs []HeldLease) string {
	if !d.r.FIFO {
		return ""
	}
	return fmt.Sprintf(" On a FIFO queue a message in flight holds back its message group: no later message of its group is received "+
		"until its lease ends (deleted, released, or run out), so the rest of %s waits behind %s.",
		either(len(hs) == 1, "its group", "each one's group"), either(len(hs) == 1, "message "+hs[0].MessageID, "messages "+heldIDs(hs)))
}

// ceilingText says when a renewed lease reaches the 12-hour ceiling.
func ceilingText(h HeldLease) string {
	return fmt.Sprintf("The lease cannot outlast %s after its receive: message %s reaches that ceiling in %s and is then redelivered anyway.",
		FormatDuration(MaxLeaseTime), h.MessageID, FormatDuration(h.CeilingIn))
}

// ceilingFinding counts and names the renewals the 12-hour ceiling
// refused: their messages come back at the ceiling whatever the heartbeat
// does.
func (d *doctor) ceilingFinding() {
	n := d.s.RefusedRenewals
	if n < MinFindingLeases || len(d.refused) == 0 {
		return
	}
	h := d.refused[0]
	ev := fmt.Sprintf("%d renewals were refused by the 12-hour ceiling, on %s (message %s, refused %d times): "+
		"a lease may not end later than %s after its receive (as on SQS), and they asked for more.",
		n, plural(len(d.refused), "lease", "leases"), h.MessageID, h.Refusals, FormatDuration(MaxLeaseTime))
	fix := "Those messages come back at the ceiling whatever the heartbeat does"
	if h.Running {
		fix += fmt.Sprintf(": message %s in %s", h.MessageID, FormatDuration(h.CeilingIn))
	}
	fix += ". A heartbeat must ask for no more than the time left to the ceiling; work that takes longer than 12 hours must be split or checkpointed."
	d.r.Findings = append(d.r.Findings, Finding{Kind: DiagnosisCeilingRefused, Leases: uint64(len(d.refused)), Evidence: ev, Fix: fix, Held: d.refused})
}

// longTimeout names a visibility timeout many times what the completed
// leases never renewed took: the stall a crash causes. It sets the
// recommended timeout to what they need, and says "" when the timeout is
// not that long or too few leases completed unrenewed to tell.
func (d *doctor) longTimeout() string {
	r, s := d.r, d.r.SinceStart
	if s.UnrenewedCompleted < MinFindingLeases || d.has(DiagnosisLeaseTooShort) {
		return ""
	}
	vis := time.Duration(r.VisibilityTimeout) * time.Second
	if vis < minLongTimeout || vis < FarBeyondFactor*s.UnrenewedP99 {
		return ""
	}
	need := max(int(math.Ceil(s.UnrenewedP99.Seconds()*recommendedTimeoutFactor)), 1)
	r.RecommendedVisibilityTimeout = need
	return fmt.Sprintf("The visibility timeout of %ds is %s the p99 of the leases completed without renewal (%s): "+
		"a consumer that crashes holding messages stalls them that long. Set VisibilityTimeout to %ds (the p99 × %.1f) "+
		"and renew the lease while the handler makes progress (a heartbeat tied to the work) for the jobs that take longer.",
		r.VisibilityTimeout, times(vis, s.UnrenewedP99), fmtSeconds(s.UnrenewedP99), need, recommendedTimeoutFactor)
}

// noP99Note says what is known of the running leases when too few leases
// completed for a p99 to judge them by: how long the oldest has been held
// at least, and no figure to set.
func (d *doctor) noP99Note() {
	h, s := d.oldest, d.r.SinceStart
	if h.MessageID == "" || h.Held < minFarHeld || len(d.r.Findings) > 0 {
		return
	}
	d.tooFew = true
	d.notes = append(d.notes, fmt.Sprintf("%s completed (a p99 needs %d), so there is no p99 to judge the running leases by: "+
		"message %s has been held at least %s%s, %s.",
		plural(int(s.Finished()), "lease has", "leases have"), MinFindingLeases, h.MessageID, FormatDuration(h.Held), seededText([]HeldLease{h}), renewedSince(h)))
}

// renewedSince says when a held lease was last renewed.
func renewedSince(h HeldLease) string {
	if h.Seeded && (h.Renewals == 0 || h.LastRenewal.IsZero()) {
		return "not renewed since this server started"
	}
	if h.Renewals == 0 || h.LastRenewal.IsZero() {
		return "never renewed"
	}
	after := h.LastRenewal.Sub(h.Begin)
	if after < time.Second {
		return fmt.Sprintf("last renewed %s after its receive", fmtSeconds(after))
	}
	return fmt.Sprintf("last renewed %s after its receive", FormatDuration(after))
}

// comeBack says when held leases end and their messages come back.
func comeBack(hs []HeldLease, now time.Time) string {
	first, last := hs[0].Deadline, hs[0].Deadline
	for _, h := range hs {
		if h.Deadline.Before(first) {
			first = h.Deadline
		}
		if h.Deadline.After(last) {
			last = h.Deadline
		}
	}
	if len(hs) == 1 {
		return fmt.Sprintf("it comes back when its lease ends, in %s (%s).", FormatDuration(first.Sub(now)), first.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("they come back when their leases end, from %s to %s from now (%s).",
		FormatDuration(first.Sub(now)), FormatDuration(last.Sub(now)), last.UTC().Format(time.RFC3339))
}

// heldIDs lists up to three held leases' messages.
func heldIDs(hs []HeldLease) string {
	ids := make([]string, len(hs))
	for i, h := range hs {
		ids[i] = h.MessageID
	}
	return idsText(ids)
}

// times says how many times base d is, as "12×".
func times(d, base time.Duration) string {
	if base <= 0 {
		return "many times"
	}
	return fmt.Sprintf("%.0f×", math.Floor(float64(d)/float64(base)))
}
