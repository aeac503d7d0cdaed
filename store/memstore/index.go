package memstore

import "time"

// add puts the new entry r of message id in the queue, in group groupID:
// last in its group and hidden until promoted.
func (qs *queueState) add(r ref, id, groupID string) {
	qs.ids.put(&qs.es, r, id)
	g, ok := qs.groups[groupID]
	if !ok {
		g = &group{id: groupID}
		g.idx = qs.groupTab.put(g)
		qs.groups[groupID] = g
		qs.link(g)
	}
	g.pushBack(&qs.es, r)
	qs.hide(r)
}

// hide puts r in the hidden timeline; messages due now are moved to ready
// by promote on the next read.
func (qs *queueState) hide(r ref) {
	qs.touch(r)
	qs.hidden.push(&qs.es, r)
	if e := qs.es.at(r); e.is(fLeased) {
		qs.leasedHidden++
		qs.groupTab.get(e.g).inflight++
	}
}

func (qs *queueState) unhide(r ref) {
	qs.touch(r)
	qs.hidden.remove(&qs.es, r)
	if e := qs.es.at(r); e.is(fLeased) {
		qs.leasedHidden--
		qs.groupTab.get(e.g).inflight--
	}
}

// promote moves the hidden messages that are visible at now to ready.
func (qs *queueState) promote(now time.Time) {
	n := nanos(now)
	for {
		r := qs.hidden.first(&qs.es)
		if r == none || qs.es.at(r).visibleAt > n {
			return
		}
		qs.unhide(r)
		qs.ready.push(&qs.es, r)
	}
}

// take takes r out of the timeline it is in, if any.
func (qs *queueState) take(r ref) {
	switch e := qs.es.at(r); {
	case e.is(fReady):
		qs.touch(r)
		qs.ready.remove(&qs.es, r)
	case e.is(fHidden):
		qs.unhide(r)
	}
}

// remove drops r, of message id, from the queue.
func (qs *queueState) remove(r ref, id string) {
	qs.take(r)
	e := qs.es.at(r)
	g := qs.groupTab.get(e.g)
	g.remove(&qs.es, r)
	if g.n == 0 {
		delete(qs.groups, g.id)
		qs.groupTab.drop(g.idx)
		qs.unlink(g)
		qs.forgetOrder(g)
	}
	qs.ids.remove(&qs.es, r, id)
	if e.x != 0 {
		qs.extras.drop(e.x)
	}
	qs.es.free(r)
}
