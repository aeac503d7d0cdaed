package ledger

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The doctor's findings on leases that ended without a completion for
// another reason than a failing handler: holders that stopped, a person's
// look with an interactive tool, and batches that fail whole.

// stoppedFinding names leases that lapsed while their holders made no
// request on the queue since before those leases ended. A consumer stopped
// without releasing what it holds (a deploy, a scale-in, a crash) leaves
// each message to wait out its visibility timeout; but so does one still
// working on the message past its lease, if it makes no request while it
// works (one message at a time, no heartbeat): the classic overrun, until
// its late delete comes. The server cannot tell them apart before the
// holder comes back, so both are said.
func (d *doctor) stoppedFinding() {
	l := d.lapses
	if l.waiting > 0 {
		d.tooFew = true
		d.notes = append(d.notes, fmt.Sprintf("%s lapsed in the last %s and %s not been seen since: too soon to tell a failing handler from a stopped consumer or one still working.",
			plural(int(l.waiting), "lease", "leases"), FormatDuration(holderGrace), either(l.waiting == 1, "its holder has", "their holders have")))
	}
	if l.stopped == 0 || len(d.dlqOf()) > 0 {
		return
	}
	if l.stopped < MinFindingLeases {
		d.tooFew = true
		d.notes = append(d.notes, fmt.Sprintf("%s lapsed and %s made no request since: too few to name a problem (a finding rests on at least %d leases).",
			plural(int(l.stopped), "lease", "leases"), either(l.stopped == 1, "its holder", "their holders"), MinFindingLeases))
		return
	}
	together := ""
	if len(l.holders) > 1 && l.lastStop.Sub(l.firstStop) <= stoppedTogether {
		together = fmt.Sprintf(", together: their last requests came within %s of each other", l.lastStop.Sub(l.firstStop).Round(time.Millisecond))
	}
	ev := fmt.Sprintf("%d leases lapsed and %s made no request on the queue since before those leases ended "+
		"(the last at %s)%s, nor came back for them (messages %s)%s. Either they stopped (a deploy, a scale-in, a crash) without releasing, "+
		"or they are still working on them past their lease, making no request while they work (a handler slower than the visibility timeout, "+
		"without a heartbeat); the server cannot tell which unless they come back.",
		l.stopped, clientsText(l.holders), l.lastStop.UTC().Format(time.RFC3339), together, idsText(l.stoppedMsgs), shortenedText(l))
	fix := fmt.Sprintf(releaseOnStop+"; otherwise each message waits out its visibility timeout (%ds here) before anyone else may have it. "+
		"A crash cannot release: keep the timeout near what the handlers need. "+
		"If they are still working, the timeout is shorter than their handlers take: a late delete will show it (lease-too-short); "+
		"renew the lease while the handler works (ChangeMessageVisibility), or set VisibilityTimeout above what the handlers take.", d.r.VisibilityTimeout)
	d.r.Findings = append(d.r.Findings, Finding{Kind: DiagnosisHoldersStopped, Leases: l.stopped, Evidence: ev, Fix: fix})
}

// releaseOnStop is what consumers that stop must do, said wherever lapses
// may be of a consumer that stopped without it.
const releaseOnStop = "Consumers that stop (a deploy, a scale-in) must release what they hold as they stop: " +
	"ChangeMessageVisibility 0 for each message held, as Baton's consumer and baton worker do"

// shortenedText says that some stopped holders' leases ended at an end
// their holder had brought forward as its last request: a release with a
// delay by a consumer that then stopped, or a shorter lease it crashed or
// works on under.
func shortenedText(l lapses) string {
	n := l.shortenedStopped
	if n == 0 {
		return ""
	}
	which := either(n == l.stopped, "all of them", fmt.Sprintf("%d of them", n))
	return fmt.Sprintf("; %s at the end their holder had brought forward (ChangeMessageVisibility to a nearer time, its last request): "+
		"a release with a delay before it stopped, or a shorter lease it crashed on or works on under", which)
}

// inspectionFinding names leases that a person's tool took and left to
// lapse: a look, not a handler's failure.
func (d *doctor) inspectionFinding() {
	l := d.lapses
	if l.inspected == 0 {
		return
	}
	what := fmt.Sprintf("%s taken by %s lapsed: an inspection by a person, not a handler failure", plural(int(l.inspected), "lease", "leases"), toolsText(l.tools))
	if l.inspected < MinFindingLeases {
		d.notes = append(d.notes, what+".")
		return
	}
	ev := fmt.Sprintf("%s (messages %s).", what, idsText(l.toolMsgs))
	fix := fmt.Sprintf("Nothing failed, but those messages were kept from the consumers for the visibility timeout (%ds). ", d.r.VisibilityTimeout)
	if d.hasRedrive {
		// A receive with VisibilityTimeout 0 counts toward maxReceiveCount
		// as every receive does (on SQS too); only peek leaves it alone.
		fix += fmt.Sprintf("Each look counted toward the RedrivePolicy's maxReceiveCount (%d): to look at messages without taking them "+
			"or counting a receive, use `baton peek` (a ReceiveMessage with VisibilityTimeout 0 still counts).", d.redrive.maxReceiveCount)
	} else {
		fix += "To look at messages without taking them, use `baton peek` (or ReceiveMessage with VisibilityTimeout 0)."
	}
	d.r.Findings = append(d.r.Findings, Finding{Kind: DiagnosisInspection, Leases: l.inspected, Evidence: ev, Fix: fix})
}

// batchFinding names messages received together that came back together
// with none completed, again and again: a consumer that fails a batch
// whole runs the good messages again with the bad one.
func (d *doctor) batchFinding() {
	b := d.batches
	if b.again < MinFindingLeases || len(d.dlqOf()) > 0 {
		return
	}
	ev := fmt.Sprintf("%d receives of several messages (up to %d) ended with none of their messages completed, "+
		"and %d messages failed with their whole batch again and again (up to %d times in a row; messages %s).",
		b.failed, b.largest, b.again, b.times, idsText(b.againMsgs))
	fix := "Either every message of those batches fails (the consumers' errors tell), or one failing message takes the good ones with it: " +
		"a consumer that fails a batch whole runs its good messages again"
	if d.hasRedrive {
		fix += fmt.Sprintf(", and after %d receives moves them to %s with the bad one", d.redrive.maxReceiveCount, arnQueueName(d.redrive.target))
	}
	fix += ". If so, " + partialBatchAdvice + " Or a consumer crashes on one of their messages and restarts under the same address and user agent " +
		"(its restarts tell), which the server sees come back as it sees one that fails a batch whole: partial batch responses do not help a crash; " +
		"find the message that kills it."
	d.r.Findings = append(d.r.Findings, Finding{Kind: DiagnosisBatchFailsWhole, Leases: b.again, Evidence: ev, Fix: fix})
}

// retryLoopFinding names messages released with a delay again and again
// and never completed: a consumer that releases a failed message for a
// retry with a back-off (as Baton's consumer does) leaves no lapse, and
// neither does one whose messages are not ready; the server cannot tell
// them apart, and says both. Retries that end in a completion are no loop.
func (d *doctor) retryLoopFinding() {
	rt := d.retries
	if rt.leases == 0 || d.deadLetterQueue() {
		return
	}
	what := fmt.Sprintf("%s released with a delay (ChangeMessageVisibility to a later time, the holder letting it come) %s, and %s",
		either(rt.leases == 1, "1 lease was", fmt.Sprintf("%d leases were", rt.leases)), retryWhen(rt),
		either(len(rt.msgs) == 1, "its message has not been completed since", fmt.Sprintf("none of their %d messages has been completed since", len(rt.msgs))))
	if rt.leases < MinFindingLeases {
		d.tooFew = true
		d.notes = append(d.notes, fmt.Sprintf("%s: too few to name a problem (a finding rests on at least %d leases).", what, MinFindingLeases))
		return
	}
	ev := what + fmt.Sprintf(" (messages %s): a handler that fails and retries with a back-off (Baton's consumer releases a failed message so), "+
		"or messages not ready again and again (on a FIFO queue, also those released behind a failing message of their group); "+
		"the server cannot tell which.", idsText(rt.msgs)) + d.loopLapsedText() + retryBatchedText(rt)
	fix := "Look at the consumers' errors (or why the messages are not ready): a message that fails every time goes round for ever, each receive a retry."
	if rt.batched > 0 {
		fix += " If the consumer fails a batch whole when one of its messages fails, " + partialBatchAdvice +
			" If its target throttles (429 or 503 with Retry-After, in the consumer's log), each receive is spent on a wait: " +
			"give the target capacity, or lower the consumer's concurrency (`baton worker --max-concurrency`)."
	}
	if d.hasRedrive {
		fix += fmt.Sprintf(" The RedrivePolicy moves a message to %s after %d receives.", arnQueueName(d.redrive.target), d.redrive.maxReceiveCount)
	} else {
		fix += " A RedrivePolicy moves a message that never succeeds aside after maxReceiveCount receives."
	}
	d.r.Findings = append(d.r.Findings, Finding{Kind: DiagnosisRetryLoop, Leases: rt.leases, Evidence: ev, Fix: fix})
}

// backOffsPast counts the lapses toward handler-failing that may be
// messages given back with a delay longer than their lease had left
// (lapses.givenBackMsgs) whose message the retry loop names, and those
// messages: a consumer that doubles its back-off (Baton's consumer, and
// `baton worker` on a queue without a RedrivePolicy) releases a failing
// message within its lease at first, and past its end once the back-off
// grows longer than the lease has left, which reads as a renewal and
// lapses there. The same retries show in both findings.
func (d *doctor) backOffsPast() (lapses, msgs int) {
	seen := map[string]bool{}
	for _, id := range d.lapses.givenBackMsgs {
		if _, in := slices.BinarySearch(d.retries.msgs, id); in {
			lapses++
			seen[id] = true
		}
	}
	return lapses, len(seen)
}

// backOffsPastText says, in handler-failing, which of its given-back
// lapses (at most givenBack) are of messages the retry loop names, when
// retryLoopFinding names it (this finding is made before it; neither is
// made on a dead-letter queue).
func (d *doctor) backOffsPastText(givenBack uint64) string {
	n, _ := d.backOffsPast()
	if n = min(n, int(givenBack)); n == 0 || d.retries.leases < MinFindingLeases {
		return ""
	}
	return fmt.Sprintf(" %s of messages the retry-loop finding names, released with a delay within their lease before: "+
		"the same retries, their back-off grown longer than the lease had left (Baton's consumer, and `baton worker` on a queue "+
		"without a RedrivePolicy, double it from 1 s to 15 minutes): one handler failing again and again, or messages not ready, behind both findings.",
		either(n == 1, "1 of those lapses is", fmt.Sprintf("%d of those lapses are", n)))
}

// loopLapsedText says, in retry-loop, whether its messages show in no
// other finding: other leases of some may have lapsed at the end a change
// past the lease's end set (backOffsPast), counted with the lapses whose
// holders have not come back.
func (d *doctor) loopLapsedText() string {
	lapses, msgs := d.backOffsPast()
	if lapses == 0 {
		return " No lease lapsed for them, so they show in no other finding."
	}
	return fmt.Sprintf(" %s of %s lapsed at the end a change past the lease's end had set, the holder going on "+
		"(a back-off grown longer than the lease had left reads as a renewal): those lapses are counted with the leases "+
		"whose holders have not come back (handler-failing's count), the same retries.",
		either(lapses == 1, "Another lease", fmt.Sprintf("%d other leases", lapses)),
		either(msgs == 1, "1 of those messages", fmt.Sprintf("%d of those messages", msgs)))
}

// retryBatchedText says that some of a retry loop's messages were
// received with every other message of a receive, all released with a
// delay: each failing, or a consumer releasing its batch whole when one
// message fails (`baton worker` without partial batch responses), leave
// the same releases.
func retryBatchedText(rt retries) string {
	if rt.batched == 0 {
		return ""
	}
	which := fmt.Sprintf("%d of those messages %s", rt.batched, either(rt.batched == 1, "was", "were"))
	if rt.batched == uint64(len(rt.msgs)) {
		which = either(rt.batched == 1, "That message was", "All of those messages were")
	}
	return fmt.Sprintf(" %s received with every other message of a receive, all released with a delay and none completed: "+
		"either each of those messages fails, or one failing message takes its batch with it (a consumer that releases a batch whole "+
		"when one of its messages fails), or what the consumer hands its batches to refused them whole (a throttled target: "+
		"`baton worker` releases a batch its target throttles, to come back within the lease); the server cannot tell which.", which)
}

// retryWhen says when the leases of a retry loop were released.
func retryWhen(rt retries) string {
	const again, moved = "right after the message's two leases before had been released too", "right before the message's move to the dead-letter queue"
	switch rt.dead {
	case 0:
		return again
	case rt.leases:
		return moved
	}
	return fmt.Sprintf("%s, or (%d of them) %s", again, rt.dead, moved)
}

// clientsText names up to three clients by address and user agent.
func clientsText(cs []Client) string {
	parts := make([]string, 0, 3)
	for _, c := range cs[:min(len(cs), 3)] {
		ua := c.UserAgent
		if i := strings.IndexByte(ua, ' '); i > 0 {
			ua = ua[:i]
		}
		parts = append(parts, strings.TrimSpace(c.Addr+" "+ua))
	}
	text := plural(len(cs), "holder", "holders") + " (" + strings.Join(parts, "; ")
	if len(cs) > 3 {
		text += fmt.Sprintf("; and %d more", len(cs)-3)
	}
	return text + ")"
}

// toolsText names the interactive tools among cs.
func toolsText(cs []Client) string {
	var names []string
	add := func(n string) {
		for _, x := range names {
			if x == n {
				return
			}
		}
		names = append(names, n)
	}
	for _, c := range cs {
		if strings.Contains(c.UserAgent, "app/"+ReceiveToolAppID) {
			add("baton receive")
		} else {
			add("the AWS CLI")
		}
	}
	return strings.Join(names, " and ")
}

// idsText lists up to three message ids.
func idsText(ids []string) string {
	out := strings.Join(ids[:min(len(ids), 3)], ", ")
	if len(ids) > 3 {
		out += fmt.Sprintf(" and %d more", len(ids)-3)
	}
	return out
}

// either is one if cond, else other.
func either(cond bool, one, other string) string {
	if cond {
		return one
	}
	return other
}
