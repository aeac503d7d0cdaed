package memstore

import (
	"slices"

	"github.com/baton-sqs/baton"
)

// link puts a new group last in the ring, before the oldest.
func (qs *queueState) link(g *group) {
	if qs.first == nil {
		g.oprev, g.onext = g, g
		qs.first, qs.next = g, g
		return
	}
	last := qs.first.oprev
	g.oprev, g.onext = last, qs.first
	last.onext, qs.first.oprev = g, g
}

// unlink takes an emptied group out of the ring; a receive that was to
// start at it starts at the group after it.
func (qs *queueState) unlink(g *group) {
	if g.onext == g {
		qs.first, qs.next = nil, nil
	} else {
		g.oprev.onext, g.onext.oprev = g.onext, g.oprev
		if qs.first == g {
			qs.first = g.onext
		}
		if qs.next == g {
			qs.next = g.onext
		}
	}
	g.oprev, g.onext = nil, nil
}

// pickFair takes one visible message from each group in turn, starting
// where the last receive stopped.
func (qs *queueState) pickFair(p baton.MessageReceiveParams) []*entry {
	var taken []*entry
	for progress := true; progress && len(taken) < p.Max; {
		progress = false
		for n := len(qs.groups); n > 0 && len(taken) < p.Max && qs.next != nil; n-- {
			g := qs.next
			qs.next = g.onext
			for e := g.head; e != nil; {
				next := e.gnext
				if !e.ready || slices.Contains(taken, e) || qs.expired(e, p) {
					e = next
					continue
				}
				taken = append(taken, e)
				progress = true
				break
			}
			if qs.next == nil {
				return taken
			}
		}
	}
	return taken
}

// pickFIFO takes, group by group, the visible messages that come before each
// group's first in-flight message, in send order. Delayed messages that were
// never received do not block their group.
func (qs *queueState) pickFIFO(p baton.MessageReceiveParams) []*entry {
	var taken []*entry
	for n := len(qs.groups); n > 0 && len(taken) < p.Max && qs.next != nil; n-- {
		g := qs.next
		qs.next = g.onext
		for e := g.head; e != nil && len(taken) < p.Max; {
			next := e.gnext
			if !e.ready {
				if e.isLeased {
					break // in flight: the rest of the group waits
				}
				e = next
				continue // delayed
			}
			if !qs.expired(e, p) {
				taken = append(taken, e)
			}
			e = next
		}
	}
	return taken
}
