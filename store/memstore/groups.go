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

// pickFair serves a fair queue's tenants (its message groups) as SQS
// documents (docs/sqs-behaviour.md §6.2): the quiet tenants first, one
// visible message from each in turn, starting where the last receive
// stopped; then the noisy ones (baton.NoisyTenant), each message from the
// noisy tenant with the fewest in flight, counting those this receive
// took.
func (qs *queueState) pickFair(p baton.MessageReceiveParams) []ref {
	noisy := qs.noisyGroups()
	taken := qs.pickRoundRobin(p, nil, func(g *group) bool { return !slices.Contains(noisy, g) })
	if len(noisy) == 0 {
		return taken
	}
	took := make([]int, len(noisy))
	for len(taken) < p.Max {
		best := -1
		for i, g := range noisy {
			if took[i] >= 0 && (best < 0 || g.inflight+took[i] < noisy[best].inflight+took[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		if r := qs.firstVisible(noisy[best], taken, p); r != none {
			taken = append(taken, r)
			took[best]++
		} else {
			took[best] = -1 // nothing more to give
		}
	}
	return taken
}

// noisyGroups lists the queue's noisy tenants; messages without a group
// are each a tenant of their own, so never noisy.
func (qs *queueState) noisyGroups() []*group {
	if qs.leasedHidden < baton.NoisyTenantInFlight {
		return nil // none can be: the common case, checked in O(1)
	}
	var noisy []*group
	for id, g := range qs.groups {
		if id != "" && baton.NoisyTenant(g.inflight, qs.leasedHidden) {
			noisy = append(noisy, g)
		}
	}
	return noisy
}

// pickRoundRobin takes, into taken, one visible message from each group
// that serve allows in turn, starting where the last receive stopped,
// until Max or none is left.
func (qs *queueState) pickRoundRobin(p baton.MessageReceiveParams, taken []ref, serve func(*group) bool) []ref {
	for progress := true; progress && len(taken) < p.Max; {
		progress = false
		for n := len(qs.groups); n > 0 && len(taken) < p.Max && qs.next != nil; n-- {
			g := qs.next
			qs.next = g.onext
			if !serve(g) {
				continue
			}
			if r := qs.firstVisible(g, taken, p); r != none {
				taken = append(taken, r)
				progress = true
			}
		}
	}
	return taken
}

// firstVisible is group g's first visible message not yet taken, dropping
// those past retention on the way; none if it has none.
func (qs *queueState) firstVisible(g *group, taken []ref, p baton.MessageReceiveParams) ref {
	for r := g.head; r != none; {
		e := qs.es.at(r)
		next := e.links[inGroup].next
		if e.is(fReady) && !slices.Contains(taken, r) && !qs.expired(r, p) {
			return r
		}
		r = next
	}
	return none
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
