package memstore

import (
	"context"
	"math"

	"github.com/baton-sqs/baton"
)

func (s *Store) MessageReceive(_ context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	qs := s.lookupID(p.QueueID)
	if qs == nil {
		return nil, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	qs.promote(p.Now)
	var taken []ref
	switch {
	case qs.fifo:
		taken = qs.pickFIFO(p)
	case len(qs.groups) > 1:
		taken = qs.pickFair(p)
	default:
		taken = qs.pickReady(p)
	}
	out := make([]*baton.Message, 0, len(taken))
	var stayVisible []ref
	now, visibleAt := nanos(p.Now), nanos(p.VisibleAt)
	for _, r := range taken {
		e := qs.es.at(r)
		if e.is(fReady) { // pickReady took its own out already
			qs.ready.remove(&qs.es, r)
		}
		if e.receiveCount < math.MaxInt32 {
			e.receiveCount++
		}
		e.epoch++
		if e.firstReceived == zeroNanos {
			e.firstReceived = now
		}
		e.flags |= fLeased
		e.leasedAt = now
		e.visibleAt = visibleAt
		m := qs.message(e, qs.id(e))
		m.Attributes = cloneAttributes(m.Attributes)
		out = append(out, &m)
		if p.VisibleAt.After(p.Now) {
			qs.hide(r)
		} else {
			stayVisible = append(stayVisible, r)
		}
	}
	for _, r := range stayVisible {
		qs.ready.push(&qs.es, r)
	}
	return out, nil
}

// pickReady takes visible messages in send order, out of ready.
func (qs *queueState) pickReady(p baton.MessageReceiveParams) []ref {
	var taken []ref
	for len(taken) < p.Max {
		r := qs.ready.first(&qs.es)
		if r == none {
			break
		}
		if qs.expired(r, p) { // dropped, out of ready
			continue
		}
		qs.ready.remove(&qs.es, r)
		taken = append(taken, r)
	}
	return taken
}
