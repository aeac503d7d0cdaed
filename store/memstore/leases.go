package memstore

import (
	"context"
	"errors"
	"time"

	"github.com/baton-sqs/baton"
)

// leaseOf finds the message and tells whether the receipt's epoch names its
// current, unexpired lease.
func (qs *queueState) leaseOf(id string, epoch uint32, now time.Time) (ref, baton.LeaseResult) {
	r := qs.ids.get(&qs.es, id)
	if r == none {
		return none, baton.LeaseGone
	}
	if e := qs.es.at(r); e.epoch != epoch || !e.is(fLeased) || e.visibleAt <= nanos(now) {
		return r, baton.LeaseLapsed
	}
	return r, baton.LeaseCurrent
}

func (s *Store) MessageDelete(_ context.Context, p baton.MessageDeleteParams) (baton.LeaseOutcome, error) {
	return s.onLease(p.QueueID, p.MessageID, p.Epoch, p.Now, func(qs *queueState, r ref, res baton.LeaseResult) baton.LeaseOutcome {
		before := qs.message(qs.es.at(r), p.MessageID)
		if baton.DeleteRemoves(res, p.RequireLive) {
			qs.remove(r, p.MessageID)
		}
		return baton.LeaseOutcome{Result: res, Message: &before}
	})
}

func (s *Store) MessageChangeVisibility(_ context.Context, p baton.MessageChangeVisibilityParams) (baton.LeaseOutcome, error) {
	return s.changeVisibility(p, false)
}

// changeVisibility is MessageChangeVisibility; unreceive takes back the
// receive of a live lease changed (MessageChangeVisibilityBatchParams).
func (s *Store) changeVisibility(p baton.MessageChangeVisibilityParams, unreceive bool) (baton.LeaseOutcome, error) {
	return s.onLease(p.QueueID, p.MessageID, p.Epoch, p.Now, func(qs *queueState, r ref, res baton.LeaseResult) baton.LeaseOutcome {
		e := qs.es.at(r)
		if res == baton.LeaseLapsed && p.AnyLease && e.epoch > p.Epoch && e.is(fLeased) && e.visibleAt > nanos(p.Now) {
			res = baton.LeaseSuperseded // a later lease, live: the change is its
		}
		before := qs.message(e, p.MessageID)
		if res.Changed() {
			// A read at a later time than p.Now may have made it visible.
			qs.take(r)
			e.visibleAt = nanos(p.VisibleAt)
			if unreceive && res == baton.LeaseCurrent && e.receiveCount > 0 {
				e.receiveCount--
			}
			if p.VisibleAt.After(p.Now) {
				qs.hide(r)
			} else {
				qs.ready.push(&qs.es, r)
			}
		}
		return baton.LeaseOutcome{Result: res, Message: &before}
	})
}

// onLease runs act, under the queue's lock, on message id of queue queueID
// with what the receipt's epoch says of its lease at now: the part that
// MessageDelete and MessageChangeVisibility share. A message that is gone
// is answered without act; a queue that is gone is ErrNotFound.
func (s *Store) onLease(queueID uint64, id string, epoch uint32, now time.Time, act func(qs *queueState, r ref, res baton.LeaseResult) baton.LeaseOutcome) (baton.LeaseOutcome, error) {
	qs := s.lookupID(queueID)
	if qs == nil {
		return baton.LeaseOutcome{}, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	r, res := qs.leaseOf(id, epoch, now)
	if r == none {
		return baton.LeaseOutcome{Result: res}, nil
	}
	return act(qs, r, res), nil
}

func (s *Store) MessageMove(_ context.Context, p baton.MessageMoveParams) (baton.LeaseOutcome, error) {
	s.mu.RLock()
	from, to := s.byID[p.QueueID], s.byID[p.ToQueueID]
	s.mu.RUnlock()
	if from == nil || to == nil {
		return baton.LeaseOutcome{}, baton.ErrNotFound
	}
	if from == to {
		return baton.LeaseOutcome{}, errors.New("memstore: move within one queue")
	}
	// Lock order between queues: lower id first.
	first, second := from, to
	if first.q.ID > second.q.ID {
		first, second = second, first
	}
	first.mu.Lock()
	defer first.mu.Unlock()
	second.mu.Lock()
	defer second.mu.Unlock()

	r := from.ids.get(&from.es, p.MessageID)
	if r == none {
		return baton.LeaseOutcome{Result: baton.LeaseGone}, nil
	}
	key := from.es.at(r).key
	before := from.message(from.es.at(r), p.MessageID)
	res := baton.LeaseCurrent
	if p.Epoch != 0 {
		if _, res = from.leaseOf(p.MessageID, p.Epoch, p.Now); res != baton.LeaseCurrent {
			return baton.LeaseOutcome{Result: res, Message: &before}, nil
		}
	}
	from.remove(r, p.MessageID)
	m := p.Moved(before)
	moved := to.newEntry(&m)
	to.es.at(moved).key = key
	to.add(moved, m.ID, m.GroupID)
	return baton.LeaseOutcome{Result: res, Message: &before}, nil
}
