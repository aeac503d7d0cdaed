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
		Delayed:  len(qs.hidden) - qs.leasedHidden,
	}
	if len(qs.hidden) > 0 {
		st.NextVisibleAt = timeOf(qs.hidden[0].visibleAt)
	}
	// Each group is in send order, so the oldest message heads a group.
	oldest, found := int64(0), false
	for _, g := range qs.groups {
		if at := g.head.sentAt; !found || at < oldest {
			oldest, found = at, true
		}
	}
	if found {
		st.OldestSentAt = timeOf(oldest)
	}
	return st, nil
}
