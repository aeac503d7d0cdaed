package memstore

import (
	"context"
	"time"

	"github.com/baton-sqs/baton"
)

// expired drops r if it is past retention and reports whether it did.
func (qs *queueState) expired(r ref, p baton.MessageReceiveParams) bool {
	if qs.es.at(r).sentAt < nanos(p.RetentionCutoff) {
		qs.dropExpired(r)
		return true
	}
	return false
}

// dropExpired removes r as past retention and tells expiredFunc.
func (qs *queueState) dropExpired(r ref) {
	e := qs.es.at(r)
	id, key := qs.id(e), e.key
	qs.remove(r, id)
	if qs.expiredFunc != nil {
		qs.expiredFunc(qs.q.ID, id, key)
	}
}

func (s *Store) MessageExpire(_ context.Context, queueID uint64, cutoff time.Time) (int, error) {
	qs := s.lookupID(queueID)
	if qs == nil {
		return 0, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	n := 0
	c := nanos(cutoff)
	qs.es.each(func(r ref) {
		if qs.es.at(r).sentAt < c {
			qs.dropExpired(r)
			n++
		}
	})
	return n, nil
}
