package consumer

import (
	"context"
	"sync"
	"time"
)

// MemoryStore is an IdempotencyStore in process memory: for tests and for
// single-process consumers that accept losing the records on restart.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]memRecord
}

type memRecord struct {
	owner string
	epoch int64
	done  bool
	until time.Time
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{records: map[string]memRecord{}} }

// Claim implements IdempotencyStore.
func (s *MemoryStore) Claim(_ context.Context, p ClaimParams) (ClaimResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[p.Key]
	if ok && r.until.After(p.Now) && (r.done || r.owner != p.Owner) {
		if r.done {
			return ClaimResult{State: Completed, Owner: r.owner, Until: r.until}, nil
		}
		return ClaimResult{State: InProgress, Owner: r.owner, Until: r.until}, nil
	}
	s.records[p.Key] = memRecord{owner: p.Owner, epoch: p.Epoch, until: p.Until}
	return ClaimResult{State: Claimed, Owner: p.Owner, Until: p.Until}, nil
}

// Renew implements IdempotencyStore.
func (s *MemoryStore) Renew(_ context.Context, p RenewParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[p.Key]
	if !ok || r.done || r.owner != p.Owner {
		return ErrFenced
	}
	if p.Until.After(r.until) {
		r.until = p.Until
		s.records[p.Key] = r
	}
	return nil
}

// Complete implements IdempotencyStore.
func (s *MemoryStore) Complete(_ context.Context, p CompleteParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[p.Key]
	if ok && r.owner != p.Owner && (r.done || r.until.After(p.Now)) {
		return ErrFenced
	}
	s.records[p.Key] = memRecord{owner: p.Owner, epoch: p.Epoch, done: true, until: p.KeepUntil}
	return nil
}

// Abandon implements IdempotencyStore.
func (s *MemoryStore) Abandon(_ context.Context, p AbandonParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.records[p.Key]; ok && !r.done && r.owner == p.Owner {
		delete(s.records, p.Key)
	}
	return nil
}

// Prune removes the records that expired by now and returns how many.
func (s *MemoryStore) Prune(_ context.Context, now time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for k, r := range s.records {
		if !r.until.After(now) {
			delete(s.records, k)
			n++
		}
	}
	return n, nil
}
