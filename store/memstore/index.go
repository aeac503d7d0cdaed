package memstore

import (
	"container/heap"
	"time"
)

// add stores a new entry, of group groupID: in its group and hidden until
// promoted.
func (qs *queueState) add(e *entry, groupID string) {
	if e.strID {
		qs.msgs.Put(e.x.id, e)
	} else {
		qs.msgs.PutUUID(e.key, e)
	}
	g, ok := qs.groups[groupID]
	if !ok {
		g = &group{id: groupID}
		qs.groups[groupID] = g
		qs.link(g)
	}
	g.pushBack(e)
	qs.hide(e)
}

// hide puts e in the hidden heap; messages due now are moved to ready by
// promote on the next read.
func (qs *queueState) hide(e *entry) {
	heap.Push(&qs.hidden, e)
	if e.isLeased {
		qs.leasedHidden++
	}
}

func (qs *queueState) unhide(e *entry) {
	heap.Remove(&qs.hidden, int(e.heapIdx))
	if e.isLeased {
		qs.leasedHidden--
	}
}

// promote moves the hidden messages that are visible at now to ready.
func (qs *queueState) promote(now time.Time) {
	n := nanos(now)
	for len(qs.hidden) > 0 && qs.hidden[0].visibleAt <= n {
		e := qs.hidden[0]
		qs.unhide(e)
		qs.ready.push(e)
	}
}

func (qs *queueState) remove(e *entry) {
	if e.ready {
		qs.ready.remove(e)
	} else if e.heapIdx >= 0 {
		qs.unhide(e)
	}
	g := e.g
	g.remove(e)
	if g.n == 0 {
		delete(qs.groups, g.id)
		qs.unlink(g)
	}
	if e.strID {
		qs.msgs.Delete(e.x.id)
	} else {
		qs.msgs.DeleteUUID(e.key)
	}
}

// hiddenHeap orders hidden messages by the time they become visible.
type hiddenHeap []*entry

func (h hiddenHeap) Len() int { return len(h) }
func (h hiddenHeap) Less(i, j int) bool {
	return h[i].visibleAt < h[j].visibleAt
}
func (h hiddenHeap) Swap(i, j int) { swapEntries(h, i, j) }
func (h *hiddenHeap) Push(x any)   { pushEntry((*[]*entry)(h), x.(*entry)) }
func (h *hiddenHeap) Pop() any     { return popEntry((*[]*entry)(h)) }
