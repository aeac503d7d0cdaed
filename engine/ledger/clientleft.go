package ledger

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Leases handed out in answers that reached no client. A ReceiveMessage
// whose client left before its answer came (most often an HTTP client whose
// read timeout is shorter than the long poll's WaitTimeSeconds) still
// leases the messages the answer holds: no one holds them, and each comes
// back when its lease lapses. Such a lapse is no handler failure, nor a
// holder that stopped: the request that would have held it was gone, and
// the client, polling again, is seen alive. The node that made the receive
// says so (Event.ClientLeft); a late completion of such a lease (by a
// receiver that had the message again, since the one that left never had
// its receipt) is read as any other.

// leftLapses are lapsed leases of a kind no holder caused: those whose
// receive's answer reached no client, those whose delete the store failed
// (unanswered.go).
type leftLapses struct {
	n uint64
	// again counts those whose message was received again after the
	// lapse.
	again uint64
	// last is the latest of their lapses; clients, who had asked for them;
	// msgs, their messages.
	last    time.Time
	clients []Client
	msgs    []string
}

// add notes the lapse of r.
func (ll *leftLapses) add(r *leaseRec) {
	ll.n++
	if r.redelivered {
		ll.again++
	}
	ll.last = later(ll.last, r.deadline)
	if r.client != (Client{}) {
		ll.clients = addClient(ll.clients, r.client)
	}
	ll.msgs = append(ll.msgs, r.msg.id)
}

// sort orders the clients and messages, each message named once.
func (ll *leftLapses) sort() {
	slices.SortFunc(ll.clients, func(a, b Client) int {
		return cmp.Or(strings.Compare(a.Addr, b.Addr), strings.Compare(a.UserAgent, b.UserAgent))
	})
	slices.Sort(ll.msgs)
	ll.msgs = slices.Compact(ll.msgs)
}

// clientLeftFinding names leases that lapsed because the answer that
// handed them out reached no client, and those that will (unheld: running,
// held far beyond the p99 by no one). Lapsed ones alone, fewer than
// MinFindingLeases, are a note, as an inspection is: no handler failed. A
// running one is a finding, as a stalled lease is: its message waits, held
// by no one, until its lease ends.
func (d *doctor) clientLeftFinding() {
	ll, running := d.lapses.left, d.unheld
	if ll.n == 0 && len(running) == 0 {
		return
	}
	fix := "Most often the client's HTTP read (response) timeout is shorter than its long poll's WaitTimeSeconds, and it gives up on every poll that waits that long; " +
		"a consumer stopping during a poll leaves the same, once. " +
		"Set the consumers' HTTP read timeout above the longest WaitTimeSeconds they poll with, plus a margin of some seconds " +
		"(the SQS API reference's ReceiveMessage asks for an HTTP response timeout longer than WaitTimeSeconds), or poll with a shorter WaitTimeSeconds."
	var parts []string
	if ll.n > 0 {
		parts = append(parts, fmt.Sprintf("%s handed out in answers to ReceiveMessage whose %s had left before getting the answer lapsed: no one held %s, "+
			"so %s waited out the visibility timeout (%ds here); no handler failed",
			either(ll.n == 1, "1 lease", fmt.Sprintf("%d leases", ll.n)), either(ll.n == 1, "client", "clients"),
			either(ll.n == 1, "it", "them"),
			either(len(ll.msgs) == 1, "its message", "their messages"), d.r.VisibilityTimeout))
	}
	if len(running) > 0 {
		parts = append(parts, unheldText(running, d.now))
	}
	what := strings.Join(parts, "; ")
	if len(running) == 0 && ll.n < MinFindingLeases {
		d.notes = append(d.notes, what+". "+fix)
		return
	}
	ev := what
	if ll.n > 0 {
		who := ""
		if len(ll.clients) > 0 {
			who = ", asked for by " + strings.Replace(clientsText(ll.clients), "holder", "client", 1)
		}
		ev = fmt.Sprintf("%s (lapsed: messages %s%s)", what, idsText(ll.msgs), who)
	}
	d.r.Findings = append(d.r.Findings, Finding{Kind: DiagnosisClientLeft, Leases: ll.n + uint64(len(running)),
		Evidence: ev + ".", Fix: fix, Held: running})
}

// unheldText says that the running leases hs, handed out in answers no
// client got, are held by no one until they end.
func unheldText(hs []HeldLease, now time.Time) string {
	ids := make([]string, len(hs))
	last := hs[0].Deadline
	for i, h := range hs {
		ids[i] = h.MessageID
		last = later(last, h.Deadline)
	}
	return fmt.Sprintf("%s handed out in answers to ReceiveMessage whose %s had left before getting the answer %s held by no one (messages %s, "+
		"the longest for %s): %s until %s (in %s)",
		plural(len(hs), "running lease", "running leases"), either(len(hs) == 1, "client", "clients"), either(len(hs) == 1, "is", "are"),
		idsText(ids), FormatDuration(hs[0].Held), either(len(hs) == 1, "its message waits", "their messages wait"),
		last.UTC().Format(time.RFC3339), FormatDuration(max(last.Sub(now), 0)))
}
