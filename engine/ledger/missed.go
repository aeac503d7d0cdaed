package ledger

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Other nodes' events can fail to arrive: a node's publication the bus
// refused beyond what it keeps to publish again (bus.go), events it
// dropped when its publisher fell behind, batches published while this
// node's link to the bus was down. A report judged on a period with such a
// gap would rest on missing evidence: a lease whose delete was missed
// reads as lapsed, its holder as stopped. So this node notes each gap it
// learns of, by the numbers every node gives its batches in turn and by
// the bus's word that its link was down, and its reports name no finding
// on a period a gap falls in: they say what was missed instead
// (DiagnosisEvidenceMissed). A link that was down while no other node
// listened (the bus says so) is a gap only for a node that ever heard
// from another: one that did may have missed it publishing, then
// stopping; one that never did is alone. While the bus says its link is
// down now (a database failing over, then the time the link takes to
// come back after it), the gap is open: it runs from the last batch
// delivered to the report's moment, for a node that ever heard another.

// maxMissedSpans bounds the gaps a ledger remembers; the oldest go first,
// and with them the reports they held back, so that a node with gaps over
// days is not silent for ever: the window of 15 minutes is what most
// reports are judged on.
const maxMissedSpans = 16

// peerHorizon is how long a node's batch numbers are remembered after its
// last batch arrived. Every node draws a new id when it starts, so without
// it the numbers of every node that ever ran would be kept for ever. A
// node forgotten and heard from again is taken for one seen first: a jump
// in its numbers goes unnoticed. The events a jump stands for are older
// than the batch after them, so that loses nothing a verdict rests on once
// the node's last batch is older than any evidence judged: the window
// (windowMinutes) and, for a lease a finding names, the lease's life
// before it (at most MaxLeaseTime). Events the node dropped are older than
// its next batch heard; a node whose bus refused it that long had, as a
// rule, no store to serve leases with either: the two are one database.
const peerHorizon = windowMinutes*time.Minute + MaxLeaseTime

// missedSpan is a time in which this node may have missed other nodes'
// events.
type missedSpan struct {
	from, to time.Time
	// batches is how many batches a node's numbers say were missed; link,
	// that the bus said the link was down, which does not count them.
	batches uint64
	link    bool
}

// missedLog tracks the other nodes' batch numbers and the gaps found.
type missedLog struct {
	mu sync.Mutex
	// last is when a batch, any node's (this one's echoes too), was last
	// delivered: a link that was down was down since then at most.
	last time.Time
	// peers is each other node's last batch number, and when it came, for
	// those heard from within peerHorizon; heard, that another node's
	// batch (numbered or not: one of an older version) ever arrived.
	peers map[uint64]peerBatch
	heard bool
	spans []missedSpan
	// downSince is when the open gap began, while the bus says its link
	// is down (zero while it is up): the last batch delivered before.
	downSince time.Time
}

type peerBatch struct {
	seq uint64
	at  time.Time
}

// admit notes a batch of node numbered seq arriving at now; it reports
// whether to apply it: not when it was applied before (a publication run
// again after its first try's outcome was lost). A jump in the numbers is
// a gap, from the node's batch before to this one. A node's first batch
// seen sets its numbers' start: it may have started before this node.
func (m *missedLog) admit(node, seq uint64, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = now
	if m.peers == nil {
		m.peers = make(map[uint64]peerBatch)
	}
	m.heard = true
	p, known := m.peers[node]
	if known && seq <= p.seq {
		return false
	}
	if !known {
		m.forgetLocked(now)
	}
	if known && seq > p.seq+1 {
		m.addLocked(missedSpan{from: p.at, to: now, batches: seq - p.seq - 1})
	}
	m.peers[node] = peerBatch{seq: seq, at: now}
	return true
}

// delivered notes that this node's own echo arrived at now.
func (m *missedLog) delivered(now time.Time) {
	m.mu.Lock()
	m.last = now
	m.mu.Unlock()
}

// deliveredFrom notes that another node's batch without numbers (a node
// of an older version) arrived at now.
func (m *missedLog) deliveredFrom(now time.Time) {
	m.mu.Lock()
	m.last, m.heard = now, true
	m.mu.Unlock()
}

// heardOthers reports whether a batch of another node ever arrived.
func (m *missedLog) heardOthers() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.heard
}

// forgetLocked forgets the numbers of the nodes not heard from within
// peerHorizon of now. It runs when a node is heard from first, so that the
// nodes remembered are bounded by the starts within peerHorizon.
func (m *missedLog) forgetLocked(now time.Time) {
	for node, p := range m.peers {
		if now.Sub(p.at) > peerHorizon {
			delete(m.peers, node)
		}
	}
}

// linkLost notes the bus's word, at now, that batches since the last one
// delivered (or since started) may have been lost.
func (m *missedLog) linkLost(started, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	from := m.last
	if from.IsZero() {
		from = started
	}
	m.addLocked(missedSpan{from: from, to: now, link: true})
	m.last, m.downSince = now, time.Time{}
}

// linkDown notes the bus's word that its link is down now: an open gap,
// from the last batch delivered (or started), until linkLost or linkUp.
func (m *missedLog) linkDown(started time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.downSince.IsZero() {
		return
	}
	m.downSince = m.last
	if m.downSince.IsZero() {
		m.downSince = started
	}
}

// linkUp notes that the link is up again with nothing missed (no other
// node listens, and none was ever heard from), at now.
func (m *missedLog) linkUp(now time.Time) {
	m.mu.Lock()
	m.last, m.downSince = now, time.Time{}
	m.mu.Unlock()
}

func (m *missedLog) addLocked(s missedSpan) {
	if len(m.spans) == maxMissedSpans {
		m.spans = append(m.spans[:0], m.spans[1:]...)
	}
	m.spans = append(m.spans, s)
}

// since returns the gaps that end at or after from, merged into one span
// from the first's start to the last's end (now, for a gap still open:
// open is then true), and whether there are any.
func (m *missedLog) since(from, now time.Time) (out missedSpan, open, found bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	spans := m.spans
	if !m.downSince.IsZero() && m.heard {
		spans = append(spans[:len(spans):len(spans)], missedSpan{from: m.downSince, to: now, link: true})
		open = true
	}
	for _, s := range spans {
		if s.to.Before(from) {
			continue
		}
		if !found || s.from.Before(out.from) {
			out.from = s.from
		}
		if !found || s.to.After(out.to) {
			out.to = s.to
		}
		out.batches += s.batches
		out.link = out.link || s.link
		found = true
	}
	return out, open, found
}

// withholdOnGap replaces the report's findings, judged on the period from
// judgedFrom, with what this node missed, when a gap falls in that period
// or in the life of a lease a finding names (one ended in the gap may read
// as held still).
func (l *Ledger) withholdOnGap(r *LeaseReport, judgedFrom, now time.Time) {
	period := judgedFrom
	for _, f := range r.Findings {
		for _, h := range f.Held {
			if h.Begin.Before(judgedFrom) {
				judgedFrom = h.Begin
			}
		}
	}
	gap, open, ok := l.missed.since(judgedFrom, now)
	if !ok {
		return
	}
	r.Findings = nil
	r.Diagnosis = DiagnosisEvidenceMissed
	r.RecommendedVisibilityTimeout = r.VisibilityTimeout
	var what []string
	if gap.batches > 0 {
		what = append(what, fmt.Sprintf("%d of their batches of lease events (or events their publisher dropped) did not arrive", gap.batches))
	}
	if gap.link && !open {
		what = append(what, "its link to them was down")
	}
	if open {
		what = append(what, "its link to them is down now (their events since do not arrive until it is back)")
	}
	r.Advice = fmt.Sprintf("This node may have missed other nodes' lease events between %s and %s: %s. "+
		"The leases of the period judged are not all known here, so no verdict is given: ask a node that did not miss them, ",
		gap.from.Format(time.RFC3339), gap.to.Format(time.RFC3339), strings.Join(what, ", and "))
	switch {
	case open:
		r.Advice += "or ask again once the link is back, and then until the last 15 minutes no longer hold the gap."
	case gap.to.Before(period):
		r.Advice += "or wait until the leases that ran through the gap have ended."
	case r.JudgedSinceStart:
		r.Advice += "or wait for leases in the last 15 minutes to judge."
	default:
		r.Advice += fmt.Sprintf("or wait until %s, when the last 15 minutes no longer hold the gap.",
			gap.to.Add(windowMinutes*time.Minute).Format(time.RFC3339))
	}
}
