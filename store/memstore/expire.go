package memstore

import (
	"context"
	"time"

	"github.com/baton-sqs/baton"
)

// expired drops e if it is past retention and reports whether it did.
func (qs *queueState) expired(e *entry, p baton.MessageReceiveParams) bool {
	if e.sentAt < nanos(p.RetentionCutoff) {
		qs.dropExpired(e)
		return true
	}
	return false
}

// dropExpired removes e as past retention and tells expiredFunc.
func (qs *queueState) dropExpired(e *entry) {
	qs.remove(e)
	if qs.expiredFunc != nil {
		qs.expiredFunc(qs.q.ID, e.id())
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
	for e := range qs.msgs.Values() {
		if e.sentAt < c {
			qs.dropExpired(e)
			n++
		}
	}
	return n, nil
}
