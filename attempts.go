package baton

import (
	"context"
	"slices"
	"sync"
	"time"
)

// AttemptLog is an AttemptStore in memory, safe for concurrent use: the
// one the engine keeps for a store that is not shared, and the one that the
// handles of a memstore.Cluster share. It is the single home of the rule
// by which attempts are kept and forgotten.
//
// Attempts are forgotten oldest first, in the order they were put: a put or
// a get forgets only what has expired, instead of passing over every
// attempt of every queue (50,000 attempts in a window once took 24 s of
// puts when each passed over all of them).
type AttemptLog struct {
	mu    sync.Mutex
	byID  map[attemptKey]Attempt
	order []attemptPut
}

type attemptKey struct {
	queueID uint64
	id      string
}

// attemptPut is one put, for forgetting it in order.
type attemptPut struct {
	key      attemptKey
	leasedAt time.Time
}

// AttemptPut records p, replacing an attempt of the same queue and id, and
// forgets the attempts leased before p.Forget. It never fails.
func (a *AttemptLog) AttemptPut(_ context.Context, p Attempt) error {
	forget := p.Forget
	p.Leases, p.Forget = slices.Clone(p.Leases), time.Time{}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID == nil {
		a.byID = make(map[attemptKey]Attempt)
	}
	a.forget(forget)
	k := attemptKey{p.QueueID, p.ID}
	a.byID[k] = p
	a.order = append(a.order, attemptPut{k, p.LeasedAt})
	return nil
}

// AttemptGet returns the attempt of queueID named id leased at or after
// since, and forgets those leased before since. It never fails.
func (a *AttemptLog) AttemptGet(_ context.Context, queueID uint64, id string, since time.Time) (Attempt, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forget(since)
	at, ok := a.byID[attemptKey{queueID, id}]
	if !ok || at.LeasedAt.Before(since) {
		return Attempt{}, false, nil
	}
	at.Leases = slices.Clone(at.Leases)
	return at, true, nil
}

// forget drops the attempts leased before cutoff, oldest put first, up to
// the first put that is still live; an attempt put again since stays.
func (a *AttemptLog) forget(cutoff time.Time) {
	n := 0
	for _, p := range a.order {
		if !p.leasedAt.Before(cutoff) {
			break
		}
		if at, ok := a.byID[p.key]; ok && at.LeasedAt.Equal(p.leasedAt) {
			delete(a.byID, p.key)
		}
		n++
	}
	if n == 0 {
		return
	}
	clear(a.order[:n])
	a.order = a.order[n:]
	if cap(a.order) > 2*len(a.order)+64 { // let go of what the front held
		a.order = append([]attemptPut(nil), a.order...)
	}
}
