package ledger

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Who holds leases, and whether they are still there. A lease that lapses
// without a late completion was left by a holder that failed on it (an
// error path: the holder goes on making requests) or that stopped (a
// deploy, a scale-in, a crash: it makes none). The ledger tells them apart
// by when each client last made a request on the queue. Clients are told
// apart by address and user agent, so two consumers on one host with one
// SDK are one client: one restarted there looks as if it lived on.

const (
	// maxSeenClients bounds the clients a queue remembers; the one seen
	// longest ago is forgotten first.
	maxSeenClients = 256
	// seenEvery is how often a client's requests that lease nothing are
	// told the other nodes (KindSeen), per queue and node.
	seenEvery = time.Second
	// holderGrace is how long after its lease lapsed a holder may go
	// unseen and still be alive: a long poll (at most 20 s) that began
	// before the lapse ends within it.
	holderGrace = 25 * time.Second
	// stoppedTogether is the span within which holders' last requests
	// count as one stop.
	stoppedTogether = time.Minute
)

// saw notes a request by c at at.
func (ql *queueLedger) saw(c Client, at time.Time) {
	if ql.seen == nil {
		ql.seen = make(map[Client]time.Time)
	}
	if last, ok := ql.seen[c]; ok {
		if at.After(last) {
			ql.seen[c] = at
		}
		return
	}
	if len(ql.seen) >= maxSeenClients {
		var oldest Client
		var when time.Time
		for k, t := range ql.seen {
			if when.IsZero() || t.Before(when) {
				oldest, when = k, t
			}
		}
		delete(ql.seen, oldest)
	}
	ql.seen[c] = at
}

// publishSeen says whether a request by c at at that leased nothing is to
// be told the other nodes: once a seenEvery per client.
func (ql *queueLedger) publishSeen(c Client, at time.Time) bool {
	if last, ok := ql.seenPublished[c]; ok && at.Sub(last) < seenEvery && !at.Before(last) {
		return false
	}
	if len(ql.seenPublished) >= maxSeenClients {
		clear(ql.seenPublished) // at worst, a few more events on the bus
	}
	if ql.seenPublished == nil {
		ql.seenPublished = make(map[Client]time.Time)
	}
	ql.seenPublished[c] = at
	return true
}

// ReceiveToolAppID is the application id `baton receive` puts in its user
// agent ("app/baton-receive"), so that the doctor knows its receives for a
// person's look.
const ReceiveToolAppID = "baton-receive"

// interactiveTools are the user-agent marks of the tools a person receives
// with to look at messages: the AWS CLI (aws-cli/1 and 2) and `baton
// receive`.
var interactiveTools = []string{"aws-cli/", "app/" + ReceiveToolAppID}

// Interactive says c is a tool a person receives with to look at messages,
// not a consumer: its leases left to lapse are an inspection.
func (c Client) Interactive() bool {
	for _, mark := range interactiveTools {
		if strings.Contains(c.UserAgent, mark) {
			return true
		}
	}
	return false
}

// lapses sorts the lapsed leases whose holder never came back late (since
// since) by what their holder did afterward.
type lapses struct {
	// inspected: received by an interactive tool; alive: the holder made
	// requests after its lease lapsed; stopped: it made none since before
	// its lease lapsed; waiting: not yet known (within holderGrace of the
	// lapse).
	inspected, alive, stopped, waiting uint64
	// seeded: leased before the node started (Seed), by a holder not
	// known; such a lease is judged by the end of its lease, not its begin.
	seeded uint64
	// tools are the interactive clients; holders, the stopped ones, with
	// the first and last of their last requests.
	tools, holders        []Client
	firstStop, lastStop   time.Time
	stoppedMsgs, toolMsgs []string
	// undecided and whole are lapsedHolders' arguments; acted holds, for
	// each receive of several messages (Event.Batch), when its holder last
	// made a request by the receipt of one of them.
	undecided time.Time
	whole     map[uint64]bool
	acted     map[uint64]time.Time
	// wentOnItself counts the alive lapses whose own holder went on: a
	// request by the receipt of another message of its receive came at the
	// lapse or after it, so the process that held it had not stopped, and
	// no other consumer with its address and user agent stands in for it
	// (sharedHolders).
	wentOnItself uint64
	// batched counts the lapses toward handler-failing (below) of leases
	// whose whole batch failed (batches.whole): each message failing, or
	// one failing message taking its batch with it, cannot be told apart.
	batched uint64
	// retried and retriedBatched count those of the lapses toward
	// handler-failing (unbatched, batched) whose message a later lease
	// completed in time: handled within a lease once received again, so
	// the lapse was no handler still working past its lease.
	retried, retriedBatched uint64
	// givenBack and givenBackBatched count those of the lapses toward
	// handler-failing (unbatched, batched) that may be messages given back
	// with a delay longer than their lease had left (givenBackLapse).
	givenBack, givenBackBatched uint64
	// receivedAgain and receivedAgainBatched count those of the lapses
	// toward handler-failing (unbatched, batched) whose message was
	// received again after the lapse, by any consumer.
	receivedAgain, receivedAgainBatched uint64
	// givenBackMsgs are the messages of the givenBack lapses, one entry a
	// lapse: those the retry loop names are its retries, their back-off
	// grown past the lease (backOffsPast).
	givenBackMsgs []string
	// lastInspected, lastStopped and lastFailing are the latest lapses of
	// the leases inspected, stopped, and of the others (alive, of an
	// unknown holder, seeded) begun before undecided, those of batches
	// that failed whole apart (lastBatched): those whose holder may yet
	// come back late are not the evidence of a failing handler.
	// lastPending is the latest of the others begun after undecided.
	lastInspected, lastStopped, lastFailing, lastBatched, lastPending time.Time
	// pending counts those others begun after undecided: their holders
	// went on (or are not known) and may yet come back late, as others
	// did. A holder not seen since is holders-stopped's, which says it
	// may still be working, and no pending lapse as well.
	pending uint64
	// shortened counts the leases among stopped and waiting that were
	// no lapse but a release with a delay (releasedDelayed) by a holder
	// not seen since it brought the end forward: a crash after shortening
	// its lease leaves the same. They are no expiry in the counts.
	shortened, shortenedStopped uint64
	// left are the lapsed leases whose receive's answer reached no client
	// (clientleft.go).
	left leftLapses
	// storeFailed are the lapsed leases whose holder's delete, in time,
	// the store failed (unanswered.go).
	storeFailed leftLapses
}

// lapsedHolders sorts the queue's leases that lapsed at or after since,
// whenever they began: those the counts of the period judged count as
// lapsed (windowFrom); those begun after undecided (if not zero) may yet
// come back late; those of the batches in whole failed with every message
// of their receive.
func (l *Ledger) lapsedHolders(queueID uint64, now, since, undecided time.Time, whole map[uint64]bool) lapses {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	out := lapses{whole: whole, undecided: undecided, acted: map[uint64]time.Time{}}
	for _, tm := range ql.messages {
		for _, r := range tm.leases {
			if r.batch != 0 && !r.actedAt.IsZero() {
				out.acted[r.batch] = later(out.acted[r.batch], r.actedAt)
			}
		}
	}
	for _, tm := range ql.messages {
		for _, r := range tm.leases {
			if !r.received || r.deadline.Before(since) {
				continue
			}
			if releasedDelayed(r) {
				ql.sortShortened(&out, r, now)
				continue
			}
			if r.state != leaseExpired || r.proven {
				continue
			}
			if r.clientLeft {
				out.left.add(r)
				continue
			}
			if r.storeFailed {
				out.storeFailed.add(r)
				continue
			}
			if r.seeded {
				out.seeded++
				out.failingLapse(r, false)
				continue
			}
			ql.sortLapse(&out, r, now)
		}
	}
	slices.SortFunc(out.holders, byClient)
	slices.SortFunc(out.tools, byClient)
	// A message whose leases lapsed twice is named once.
	slices.Sort(out.stoppedMsgs)
	out.stoppedMsgs = slices.Compact(out.stoppedMsgs)
	slices.Sort(out.toolMsgs)
	out.toolMsgs = slices.Compact(out.toolMsgs)
	out.left.sort()
	out.storeFailed.sort()
	return out
}

// failingLapse notes the lapse of r, which counts toward handler-failing;
// givenBack, that r may be a message its holder gave back with a delay.
func (out *lapses) failingLapse(r *leaseRec, givenBack bool) {
	switch {
	case !out.undecided.IsZero() && r.begin.After(out.undecided):
		out.pending++
		out.lastPending = later(out.lastPending, r.deadline)
	case r.batch != 0 && out.whole[r.batch]:
		out.batched++
		out.lastBatched = later(out.lastBatched, r.deadline)
		if completedLater(r) {
			out.retriedBatched++
		}
		if r.redelivered {
			out.receivedAgainBatched++
		}
		if givenBack {
			out.givenBackBatched++
		}
	default:
		out.lastFailing = later(out.lastFailing, r.deadline)
		if completedLater(r) {
			out.retried++
		}
		if r.redelivered {
			out.receivedAgain++
		}
		if givenBack {
			out.givenBack++
			out.givenBackMsgs = append(out.givenBackMsgs, r.msg.id)
		}
	}
}

// givenBackLapse says that r, which lapsed, may have been no lease kept
// but a message its holder gave back with a delay longer than its lease
// had left (a retry's back-off, or not ready), which reads as a renewal
// (changed): it lapsed at the end its holder's last renewal set, not on
// the handler's progress, and its holder, seen at last, made a request on
// the queue after that renewal without renewing it again. A heartbeat
// renews again before the end it set, so a lapse shows that it stopped:
// a handler that failed after its lease was renewed, or a back-off. (A
// running lease renewed more than once may yet be a heartbeat's, and is
// read as one: HeldLease.mayBeGivenBack.)
func givenBackLapse(r *leaseRec, last time.Time) bool {
	return r.renewals > 0 && !r.progress && last.After(r.deadlineAt)
}

// completedLater says a later lease of r's message completed in time.
func completedLater(r *leaseRec) bool {
	for _, x := range r.msg.leases {
		if x.epoch > r.epoch && x.received && x.state == leaseDeleted {
			return true
		}
	}
	return false
}

// sortShortened sorts a lease its holder released with a delay in a
// retry's run (retryShaped), if the holder has not been seen since
// (stopped, or not yet known): one that went on released it for a retry
// (retryLoops). A single release with a delay before a stop is a consumer
// that gave back a message not ready, then stopped as a deploy stops it.
func (ql *queueLedger) sortShortened(out *lapses, r *leaseRec, now time.Time) {
	if !retryShaped(r) {
		return
	}
	switch fate, _ := ql.fateOf(r, now); fate {
	case holderStopped:
		out.shortenedStopped++
	case holderWaiting:
	default:
		return
	}
	out.shortened++
	ql.sortLapse(out, r, now)
}

func (ql *queueLedger) sortLapse(out *lapses, r *leaseRec, now time.Time) {
	c := r.client
	switch fate, last := ql.fateOf(r, now); fate {
	case holderInteractive:
		out.inspected++
		out.lastInspected = later(out.lastInspected, r.deadline)
		out.tools = addClient(out.tools, c)
		out.toolMsgs = append(out.toolMsgs, r.msg.id)
	case holderUnknown:
		// An unknown holder: judged by the counts (handler-failing).
		out.failingLapse(r, false)
	case holderAlive:
		out.alive++ // a request at the lapse or after it
		if r.batch != 0 && !out.acted[r.batch].Before(r.deadline) {
			out.wentOnItself++
		}
		out.failingLapse(r, givenBackLapse(r, last))
	case holderWaiting:
		out.waiting++
	default:
		out.stopped++
		out.lastStopped = later(out.lastStopped, r.deadline)
		out.holders = addClient(out.holders, c)
		out.stoppedMsgs = append(out.stoppedMsgs, r.msg.id)
		if out.firstStop.IsZero() || last.Before(out.firstStop) {
			out.firstStop = last
		}
		if last.After(out.lastStop) {
			out.lastStop = last
		}
	}
}

// holderFate is what the server saw of a lapsed lease's holder after the
// lapse.
type holderFate int

const (
	// holderUnknown: the lease's holder is not known (no client).
	holderUnknown holderFate = iota
	// holderInteractive: a person's tool (Client.Interactive).
	holderInteractive
	// holderAlive: it made a request on the queue at the lapse or after.
	holderAlive
	// holderWaiting: not seen since, but within holderGrace of the lapse.
	holderWaiting
	// holderStopped: it made no request since before the lapse: it
	// stopped, crashed, or works on past its lease without a request.
	holderStopped
)

// fateOf says what r's holder did after r lapsed at its deadline, or,
// for a lease it released with a delay, after that release, and when it
// was last seen (its receive, if forgotten since). A holder that shortened
// its lease and made no request since it did is no holder that released
// for a retry and went on: it may have crashed.
func (ql *queueLedger) fateOf(r *leaseRec, now time.Time) (holderFate, time.Time) {
	c := r.client
	last, ok := ql.seen[c]
	wentOn := !last.Before(r.deadline)
	if releasedDelayed(r) {
		wentOn = last.After(r.snoozeAt)
	}
	switch {
	case c.Interactive():
		return holderInteractive, last
	case c == Client{}:
		return holderUnknown, last
	case ok && wentOn:
		return holderAlive, last
	case now.Sub(r.deadline) < holderGrace:
		return holderWaiting, last
	case !ok:
		return holderStopped, r.begin
	}
	return holderStopped, last
}

func addClient(cs []Client, c Client) []Client {
	for _, x := range cs {
		if x == c {
			return cs
		}
	}
	return append(cs, c)
}

// byClient orders clients by address, then user agent.
func byClient(a, b Client) int {
	return cmp.Or(strings.Compare(a.Addr, b.Addr), strings.Compare(a.UserAgent, b.UserAgent))
}
