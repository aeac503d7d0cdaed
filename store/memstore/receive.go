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
	var taken []*entry
	switch {
	case qs.fifo:
		taken = qs.pickFIFO(p)
	case len(qs.groups) > 1:
		taken = qs.pickFair(p)
	default:
		taken = qs.pickReady(p)
	}
	out := make([]*baton.Message, 0, len(taken))
	var stayVisible []*entry
	now, visibleAt := nanos(p.Now), nanos(p.VisibleAt)
	for _, e := range taken {
		if e.ready { // pickReady took its own out already
			qs.ready.remove(e)
		}
		if e.receiveCount < math.MaxInt32 {
			e.receiveCount++
		}
		e.epoch++
		if e.firstReceived == zeroNanos {
			e.firstReceived = now
		}
		e.isLeased = true
		e.leased = now
		e.visibleAt = visibleAt
		if p.VisibleAt.After(p.Now) {
			qs.hide(e)
		} else {
			stayVisible = append(stayVisible, e)
		}
		m := qs.message(e, e.id())
		m.Attributes = cloneAttributes(m.Attributes)
		out = append(out, &m)
	}
	for _, e := range stayVisible {
		qs.ready.push(e)
	}
	return out, nil
}

// pickReady takes visible messages in send order, out of ready.
func (qs *queueState) pickReady(p baton.MessageReceiveParams) []*entry {
	var taken []*entry
	for len(taken) < p.Max {
		e := qs.ready.first()
		if e == nil {
			break
		}
		if qs.expired(e, p) { // dropped, out of ready
			continue
		}
		qs.ready.remove(e)
		taken = append(taken, e)
	}
	return taken
}
