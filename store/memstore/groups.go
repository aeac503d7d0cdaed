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
func (qs *queueState) pickFair(p baton.MessageReceiveParams) []ref {
	var taken []ref
	for progress := true; progress && len(taken) < p.Max; {
		progress = false
		for n := len(qs.groups); n > 0 && len(taken) < p.Max && qs.next != nil; n-- {
			g := qs.next
			qs.next = g.onext
			for r := g.head; r != none; {
				e := qs.es.at(r)
				next := e.links[inGroup].next
				if !e.is(fReady) || slices.Contains(taken, r) || qs.expired(r, p) {
					r = next
					continue
				}
				taken = append(taken, r)
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

// pickFIFO takes, group by group in the queue's order (fifoorder.go), the
// visible messages that come before each group's first in-flight message,
// in send order. Delayed messages that were never received do not block
// their group.
func (qs *queueState) pickFIFO(p baton.MessageReceiveParams) []ref {
	qs.settle()
	var taken []ref
	for len(taken) < p.Max && len(qs.order) > 0 {
		g := qs.order.pop()
		qs.touchGroup(g) // what it gives changes its place
		for r := g.head; r != none && len(taken) < p.Max; {
			e := qs.es.at(r)
			next := e.links[inGroup].next
			if !e.is(fReady) {
				if e.is(fLeased) {
					break // in flight: the rest of the group waits
				}
				r = next
				continue // delayed
			}
			if !qs.expired(r, p) {
				taken = append(taken, r)
			}
			r = next
		}
	}
	return taken
}
