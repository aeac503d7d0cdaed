package pebblestore_test

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// What the power-loss test checks (see powerloss_test.go), from the calls
// as the clients saw them.

type plKind int

const (
	plSend plKind = iota
	plReceive
	plDelete
	plChange
	plPurge
	plCreateQueue
	plDeleteQueue
	plGetQueue
	plRecreateQueue
)

// plEvent is what one call did to one message (or queue), as its client
// saw it: a batch of n entries is n events of one call.
type plEvent struct {
	kind  plKind
	queue string
	// body identifies a message; id is the message id the send returned
	// or the receive gave.
	body, id string
	handle   string
	vis      int // the receive's visibility timeout, or the change's
	err      error
	// start and end order the call's start and return among all calls;
	// startAt and endAt are the clock then.
	start, end     int64
	startAt, endAt time.Time

	// FIFO sends: the group, the message's place in it, the deduplication
	// id, the send it repeats (nil for a first send), the sequence number.
	group, dedup string
	index        int
	dupOf        *plEvent
	seqNo        string

	// Receives: the call and the place in its answer; empty marks a
	// receive that got nothing; drained one of the check's after the cut.
	call    *plCall
	pos     int
	empty   bool
	drained bool
}

// plCall is one receive's answer.
type plCall struct{ got []*plEvent }

// plCheck holds the events of a cut and the problems found in them.
type plCheck struct {
	events []*plEvent
	// cut is the order of the cut: a call that returned before it is
	// acknowledged. The events of the calls that had not are made
	// concurrent with everything after the cut.
	cut      int64
	problems []string

	bySend    map[string]*plEvent   // the send of each body
	byBody    map[string][]*plEvent // every event of each body
	byQueue   map[string][]*plEvent // purges and queue calls, by queue
	nextSeq   *plEvent
	drainedAt map[string]time.Time
}

func newPLCheck(events []*plEvent, cut int64) *plCheck {
	for _, e := range events {
		if e.end > cut {
			e.end = math.MaxInt64 // unknown: it may or may not have happened
		}
	}
	return &plCheck{events: events, cut: cut, drainedAt: map[string]time.Time{}}
}

func (c *plCheck) problemf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// acked reports whether e's call returned, before the cut if it was made
// before it, and succeeded.
func (c *plCheck) acked(e *plEvent) bool { return e.end != math.MaxInt64 && e.err == nil }

// refused reports whether e's call returned and changed nothing.
func (c *plCheck) refused(e *plEvent) bool { return e.end != math.MaxInt64 && isRefusal(e.err) }

// before reports whether a returned, successful, before b began.
func (c *plCheck) before(a, b *plEvent) bool { return c.acked(a) && a.end < b.start }

// index builds the maps of the events.
func (c *plCheck) index() {
	c.bySend, c.byBody, c.byQueue = map[string]*plEvent{}, map[string][]*plEvent{}, map[string][]*plEvent{}
	for _, e := range c.events {
		switch e.kind {
		case plSend:
			c.bySend[e.body] = e
			c.byBody[e.body] = append(c.byBody[e.body], e)
		case plReceive, plDelete, plChange:
			if !e.empty {
				c.byBody[e.body] = append(c.byBody[e.body], e)
			}
		default:
			c.byQueue[e.queue] = append(c.byQueue[e.queue], e)
		}
	}
}

// churned returns the names of the queues the workload created.
func (c *plCheck) churned() []string {
	var names []string
	seen := map[string]bool{}
	for _, e := range c.events {
		if e.kind == plCreateQueue && e.queue != plStd && e.queue != plPurged && e.queue != plFIFO && !seen[e.queue] {
			seen[e.queue] = true
			names = append(names, e.queue)
		}
	}
	return names
}

func (c *plCheck) checkAll() {
	for _, e := range c.events {
		if e.kind == plReceive && !e.empty && (e.drained || e.end != math.MaxInt64) {
			c.checkReceive(e)
		}
		if e.kind == plSend && e.dupOf != nil {
			c.checkDedup(e)
		}
	}
	c.checkLost()
	c.checkQueues()
	c.checkSequence()
}

// checkReceive checks one message a receive returned: it was sent, not
// deleted or purged before, not in a lease, not ahead of its group.
func (c *plCheck) checkReceive(r *plEvent) {
	s := c.bySend[r.body]
	if s == nil {
		c.problemf("PHANTOM: %s received %q, which no call sent", c.where(r), r.body)
		return
	}
	if s.dupOf != nil && c.acked(s) && s.id == s.dupOf.id {
		c.problemf("DUPLICATE: %s received %q, sent under the deduplication id of %q and deduplicated", c.where(r), r.body, s.dupOf.body)
	}
	var lease *plEvent
	for _, e := range c.byBody[r.body] {
		switch {
		case e.kind == plDelete && c.before(e, r):
			c.problemf("BACK: %s received %q after its delete was acknowledged (%s)", c.where(r), r.body, c.where(e))
		case e.kind == plReceive && e != r && c.before(e, r) && (lease == nil || e.end > lease.end):
			lease = e
		}
	}
	for _, p := range c.byQueue[r.queue] {
		if p.kind == plPurge && c.before(p, r) && c.before(s, p) {
			c.problemf("BACK: %s received %q, sent before an acknowledged purge of its queue (%s)", c.where(r), r.body, c.where(p))
		}
	}
	if lease != nil {
		c.checkLease(r, lease)
	}
	if s.group != "" && s.dupOf == nil {
		c.checkOrder(r, s)
	}
}

// checkLease checks that r did not receive its message before the end of
// the lease of the receive before it, l, as acknowledged visibility
// changes since moved it. It checks nothing when a change may or may not
// have happened, or overlaps another.
func (c *plCheck) checkLease(r, l *plEvent) {
	// The lease ends no sooner than this.
	end := l.startAt.Add(time.Duration(l.vis) * time.Second)
	var changes []*plEvent
	for _, e := range c.byBody[r.body] {
		if e.kind != plChange || c.refused(e) || e.end < l.start {
			continue
		}
		if r.queue == plFIFO && e.handle != l.handle {
			continue // a superseded handle changes nothing on a FIFO queue
		}
		if e.start > r.end {
			continue // after r
		}
		if !c.before(e, r) || e.start < l.end {
			return // may or may not have moved it, or when is unclear
		}
		changes = append(changes, e)
	}
	slices.SortFunc(changes, func(a, b *plEvent) int { return int(a.end - b.end) })
	for i, ch := range changes {
		if i > 0 && ch.start < changes[i-1].end {
			return
		}
		moved := ch.startAt.Add(time.Duration(ch.vis) * time.Second)
		if ch.endAt.Before(end) {
			end = moved // the lease was in force: the change moved it
		} else if moved.Before(end) {
			end = moved // it may have lapsed first, or been moved
		}
	}
	if r.endAt.Before(end) {
		c.problemf("EARLY: %s received %q by %v, in the lease of %s until at least %v",
			c.where(r), r.body, r.endAt.Sub(plBase), c.where(l), end.Sub(plBase))
	}
}

// checkOrder checks that no message of r's group sent before it (s) may
// still have been there, undeleted, when r received it.
func (c *plCheck) checkOrder(r, s *plEvent) {
	for _, other := range c.events {
		if other.kind != plSend || other.queue != plFIFO || other.group != s.group || other.dupOf != nil ||
			other.index >= s.index || !c.before(other, r) {
			continue
		}
		if slices.ContainsFunc(r.call.got[:r.pos], func(e *plEvent) bool { return e.body == other.body }) {
			continue
		}
		deleted := slices.ContainsFunc(c.byBody[other.body], func(e *plEvent) bool {
			return e.kind == plDelete && !c.refused(e) && e.start < r.end
		})
		if !deleted {
			c.problemf("ORDER: %s received %q (group %s, #%d) while %q (#%d), acknowledged before, was not deleted",
				c.where(r), r.body, s.group, s.index, other.body, other.index)
		}
	}
}

// checkDedup checks that a send under the deduplication id of an
// acknowledged send, within its window, was answered with its message.
func (c *plCheck) checkDedup(d *plEvent) {
	o := d.dupOf
	if !c.acked(d) || !c.before(o, d) || !d.endAt.Before(o.startAt.Add(plDedupWindow)) {
		return
	}
	if d.id != o.id {
		c.problemf("DEDUP: %s sent %q under the deduplication id of %q: got message %s, want %s",
			c.where(d), d.body, o.body, d.id, o.id)
	}
}

// checkLost checks that every acknowledged send was received after the
// cut, unless something that may have removed it happened.
func (c *plCheck) checkLost() {
	for _, s := range c.events {
		if s.kind != plSend || !c.acked(s) || s.dupOf != nil {
			continue
		}
		if slices.ContainsFunc(c.byBody[s.body], func(e *plEvent) bool { return e.kind == plReceive && e.drained }) {
			continue
		}
		removable := slices.ContainsFunc(c.byBody[s.body], func(e *plEvent) bool {
			return e.kind == plDelete && !c.refused(e)
		}) || slices.ContainsFunc(c.byQueue[s.queue], func(e *plEvent) bool {
			return (e.kind == plPurge || e.kind == plDeleteQueue) && !c.refused(e) && e.end > s.start
		})
		if !removable {
			c.problemf("LOST: %s sent %q (message %s), acknowledged; not there after the cut", c.where(s), s.body, s.id)
		}
	}
}

// checkQueues checks the queues created and deleted before the cut.
func (c *plCheck) checkQueues() {
	for _, name := range c.churned() {
		var created, deleteTried, deleted bool
		var deletedAt time.Time
		var got, again *plEvent
		for _, e := range c.byQueue[name] {
			switch {
			case e.kind == plCreateQueue && c.acked(e):
				created = true
			case e.kind == plDeleteQueue:
				deleteTried = true
				if c.acked(e) {
					deleted, deletedAt = true, e.startAt
				}
			case e.kind == plGetQueue:
				got = e
			case e.kind == plRecreateQueue:
				again = e
			}
		}
		switch {
		case created && !deleteTried && got.err != nil:
			c.problemf("LOST: queue %s, its creation acknowledged and no deletion tried, is gone after the cut: %v", name, got.err)
		case deleted && got.err == nil:
			c.problemf("BACK: queue %s, its deletion acknowledged, is there after the cut", name)
		case deleted && again != nil && again.startAt.Before(deletedAt.Add(time.Minute)) && again.err == nil:
			c.problemf("BACK: queue %s, deleted at %v, could be created again at %v", name, deletedAt.Sub(plBase), again.startAt.Sub(plBase))
		}
	}
}

// checkSequence checks that the sequence number of a send after the cut
// is above every one acknowledged before it.
func (c *plCheck) checkSequence() {
	next := c.nextSeq
	if next == nil || next.err != nil {
		c.problemf("the send after the cut failed: %v", next.err)
		return
	}
	for _, s := range c.events {
		if s.kind == plSend && s.queue == plFIFO && c.acked(s) && s != next && s.dupOf == nil &&
			!seqBelow(s.seqNo, next.seqNo) {
			c.problemf("SEQUENCE: %s got %s, not below %s given after the cut", c.where(s), s.seqNo, next.seqNo)
		}
	}
}

// seqBelow compares two sequence numbers, decimal strings without leading
// zeros.
func seqBelow(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// where describes the call of e.
func (c *plCheck) where(e *plEvent) string {
	names := map[plKind]string{plSend: "send", plReceive: "receive", plDelete: "delete", plChange: "visibility change",
		plPurge: "purge", plCreateQueue: "create queue", plDeleteQueue: "delete queue"}
	side := "before the cut"
	if e.start > c.cut {
		side = "after the cut"
	}
	state := "acknowledged"
	switch {
	case e.end == math.MaxInt64:
		state = "in flight at the cut"
	case e.err != nil:
		state = "failed: " + e.err.Error()
	}
	return fmt.Sprintf("%s on %s %s (%s, at %v..%v)", names[e.kind], e.queue, side, state, e.startAt.Sub(plBase), e.endAt.Sub(plBase))
}

// tally counts the acknowledged calls of the workload, and what the
// drain received.
func (c *plCheck) tally() plTally {
	var t plTally
	calls := map[int64]bool{}
	for _, e := range c.events {
		if e.start > c.cut {
			if e.kind == plReceive && e.drained {
				t.drained++
			}
			continue
		}
		if e.end == math.MaxInt64 {
			if !calls[-e.start] {
				calls[-e.start] = true
				t.inFlight++
			}
			continue
		}
		if !c.acked(e) {
			continue
		}
		if !calls[e.start] {
			calls[e.start] = true
			t.calls++
		}
		switch e.kind {
		case plSend:
			t.sends++
		case plReceive:
			if !e.empty {
				t.receives++
			}
		case plDelete:
			t.deletes++
		case plChange:
			t.changes++
		case plPurge:
			t.purges++
		case plCreateQueue, plDeleteQueue:
			t.queueOps++
		}
	}
	return t
}
