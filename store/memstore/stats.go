package memstore

import (
	"context"

	"github.com/baton-sqs/baton"
)

func (s *Store) MessageStats(_ context.Context, p baton.MessageStatsParams) (baton.MessageStats, error) {
	qs := s.lookupID(p.QueueID)
	if qs == nil {
		return baton.MessageStats{}, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	qs.promote(p.Now)
	st := baton.MessageStats{
		Visible:  qs.ready.n,
		InFlight: qs.leasedHidden,
		Delayed:  qs.hidden.n - qs.leasedHidden,
	}
	if r := qs.hidden.first(&qs.es); r != none {
		st.NextVisibleAt = timeOf(qs.es.at(r).visibleAt)
	}
	// Each group is in send order, so the oldest message heads a group.
	oldest, found := int64(0), false
	for _, g := range qs.groups {
		if at := qs.es.at(g.head).sentAt; !found || at < oldest {
			oldest, found = at, true
		}
	}
	if found {
		st.OldestSentAt = timeOf(oldest)
	}
	return st, nil
}

// Messages returns how many messages the store holds over all its queues.
func (s *Store) Messages() int {
	s.mu.RLock()
	states := make([]*queueState, 0, len(s.byID))
	for _, qs := range s.byID {
		states = append(states, qs)
	}
	s.mu.RUnlock()
	n := 0
	for _, qs := range states {
		qs.mu.Lock()
		n += qs.es.n
		qs.mu.Unlock()
	}
	return n
}
