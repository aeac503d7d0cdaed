package memstore

// The order of a FIFO queue's groups against each other (baton.Store's
// MessageReceive): the group whose first receivable message has waited
// longest comes first. A message waits from the time it became visible,
// its VisibleAt: its send (or the end of its delay), or the end of its
// last lease, lapsed or released. Ties go to the earlier sent (SentAt,
// then SequenceNumber).
//
// A group's place changes only when one of its messages does (a send,
// receive, delete, move or visibility change, or promote making it
// visible), so the queue keeps its open groups in a heap by that key and
// marks a group dirty when one of its messages changes; a receive first
// brings the dirty groups' places up to date (settle). A receive so costs
// the groups it takes and the groups changed since the last one, not a
// pass over every group.

// groupKey is where a group stands: its first receivable message's
// VisibleAt, SentAt and SequenceNumber.
type groupKey struct {
	visibleAt, sentAt int64
	seq               string
}

func (a groupKey) less(b groupKey) bool {
	if a.visibleAt != b.visibleAt {
		return a.visibleAt < b.visibleAt
	}
	if a.sentAt != b.sentAt {
		return a.sentAt < b.sentAt
	}
	return a.seq < b.seq // fixed width: text order is numeric order
}

// touch marks the group of entry r as changed, on a FIFO queue.
func (qs *queueState) touch(r ref) {
	if qs.fifo {
		qs.touchGroup(qs.groupTab.get(qs.es.at(r).g))
	}
}

func (qs *queueState) touchGroup(g *group) {
	if !g.dirty {
		g.dirty = true
		qs.dirty = append(qs.dirty, g)
	}
}

// settle brings the places of the dirty groups up to date.
func (qs *queueState) settle() {
	for _, g := range qs.dirty {
		g.dirty = false
		if g.n == 0 {
			continue // forgotten; remove took it out of the heap
		}
		k, open := qs.headKey(g)
		switch {
		case open && g.orderAt > 0:
			g.key = k
			qs.order.fix(g)
		case open:
			g.key = k
			qs.order.push(g)
		case g.orderAt > 0:
			qs.order.remove(g)
		}
	}
	clear(qs.dirty)
	qs.dirty = qs.dirty[:0]
}

// headKey returns the key of g's first receivable message, and false if g
// has none now: its first message that is visible or in flight is in
// flight, or it holds only delayed messages never received.
func (qs *queueState) headKey(g *group) (groupKey, bool) {
	for r := g.head; r != none; r = nextIn(&qs.es, inGroup, r) {
		e := qs.es.at(r)
		if e.is(fReady) {
			k := groupKey{visibleAt: e.visibleAt, sentAt: e.sentAt}
			if x := qs.extras.get(e.x); x != nil {
				k.seq = x.seq
			}
			return k, true
		}
		if e.is(fLeased) {
			return groupKey{}, false
		}
	}
	return groupKey{}, false
}

// forget takes an emptied group out of the order.
func (qs *queueState) forgetOrder(g *group) {
	if g.orderAt > 0 {
		qs.order.remove(g)
	}
}

// groupHeap is a min-heap of groups by key; a group's orderAt is its
// place plus one, 0 when it is not in the heap.
type groupHeap []*group

func (h *groupHeap) push(g *group) {
	*h = append(*h, g)
	g.orderAt = len(*h)
	h.up(len(*h) - 1)
}

// pop takes the first group out.
func (h *groupHeap) pop() *group {
	g := (*h)[0]
	h.remove(g)
	return g
}

func (h *groupHeap) remove(g *group) {
	i, n := g.orderAt-1, len(*h)-1
	if i != n {
		h.swap(i, n)
	}
	(*h)[n] = nil
	*h = (*h)[:n]
	g.orderAt = 0
	if i != n && !h.down(i) {
		h.up(i)
	}
}

func (h *groupHeap) fix(g *group) {
	if i := g.orderAt - 1; !h.down(i) {
		h.up(i)
	}
}

func (h groupHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].orderAt, h[j].orderAt = i+1, j+1
}

func (h groupHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h[j].key.less(h[i].key) {
			return
		}
		h.swap(i, j)
		j = i
	}
}

func (h groupHeap) down(i0 int) bool {
	i, n := i0, len(h)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j2 := j + 1; j2 < n && h[j2].key.less(h[j].key) {
			j = j2
		}
		if !h[j].key.less(h[i].key) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
