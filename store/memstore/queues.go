package memstore

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
)

// queueState is one queue with its messages: their entries in a slab, found
// by id through ids. Visible messages wait in ready, taken in send order;
// hidden ones (delayed or in flight) wait in hidden, in the order they
// become visible.
type queueState struct {
	mu     sync.Mutex
	q      baton.Queue
	es     slab
	ids    idIndex
	ready  timeline
	hidden timeline
	// leasedHidden counts the hidden messages that are in flight; the rest
	// are delayed.
	leasedHidden int

	// groups holds every message in send order per GroupID ("" for
	// messages without one); groupTab numbers them for the entries. The
	// groups are also linked in a ring, in the order they were made, for
	// the round-robin receives of a fair queue: first is the oldest, next
	// is where the next receive starts (both nil without groups). A ring
	// forgets an emptied group at once; a list searched for it cost a pass
	// over every group, n² to drain n groups.
	groups      map[string]*group
	groupTab    table[group]
	first, next *group
	// order holds a FIFO queue's groups that a receive may take from, in
	// the order it takes them, as of the last settle; dirty are the
	// groups changed since (fifoorder.go).
	order groupHeap
	dirty []*group

	// extras are the entries' out-of-line fields.
	extras table[extra]

	// senders are the distinct SenderIDs of the queue's messages, up to
	// maxSenders; senderIdx maps each to its entry.sender.
	senders   []string
	senderIdx map[string]uint8

	fifo  bool
	seq   uint64
	dedup map[string]dedupEntry

	expiredFunc func(queueID uint64, messageID string, key uint64)
}

func (s *Store) newQueueState(q *baton.Queue) *queueState {
	return &queueState{
		q: cloneQueue(q), ready: timeline{flag: fReady}, hidden: timeline{flag: fHidden},
		groups: make(map[string]*group), fifo: q.IsFIFO(), dedup: make(map[string]dedupEntry),
		expiredFunc: s.expiredFunc,
	}
}

func (s *Store) QueueCreate(_ context.Context, p baton.QueueCreateParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := queueKey{p.Queue.Region, p.Queue.Account, p.Queue.Name}
	if _, ok := s.queues[k]; ok {
		return baton.ErrExists
	}
	if at, ok := s.deleted[k]; ok && at.After(p.DeletedCutoff) {
		return baton.ErrDeletedRecently
	}
	qs := s.newQueueState(p.Queue)
	s.queues[k] = qs
	s.byID[p.Queue.ID] = qs
	return nil
}

func (s *Store) QueueGet(_ context.Context, region, account, name string) (*baton.Queue, error) {
	qs := s.lookup(region, account, name)
	if qs == nil {
		return nil, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	q := cloneQueue(&qs.q)
	return &q, nil
}

func (s *Store) lookup(region, account, name string) *queueState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.queues[queueKey{region, account, name}]
}

func (s *Store) lookupID(id uint64) *queueState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byID[id]
}

func (s *Store) QueueList(_ context.Context, p baton.QueueListParams) ([]*baton.Queue, error) {
	s.mu.RLock()
	var states []*queueState
	for k, qs := range s.queues {
		if (p.Region == "" || k.region == p.Region) && (p.Account == "" || k.account == p.Account) && strings.HasPrefix(k.name, p.Prefix) && (p.After == "" || k.name > p.After) {
			states = append(states, qs)
		}
	}
	s.mu.RUnlock()
	sort.Slice(states, func(i, j int) bool {
		a, b := &states[i].q, &states[j].q
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Account < b.Account || a.Account == b.Account && a.Region < b.Region
	})
	if p.Limit > 0 && len(states) > p.Limit {
		states = states[:p.Limit]
	}
	out := make([]*baton.Queue, len(states))
	for i, qs := range states {
		qs.mu.Lock()
		q := cloneQueue(&qs.q)
		qs.mu.Unlock()
		out[i] = &q
	}
	return out, nil
}

func (s *Store) QueueUpdate(_ context.Context, p baton.QueueUpdateParams) (*baton.Queue, error) {
	qs := s.lookup(p.Region, p.Account, p.Name)
	if qs == nil {
		return nil, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	tags, err := p.Tags(qs.q.Tags)
	if err != nil {
		return nil, err
	}
	if p.Attributes != nil {
		qs.q.Attributes = *p.Attributes
	}
	qs.q.Tags = tags
	if !p.ModifiedAt.IsZero() {
		qs.q.ModifiedAt = p.ModifiedAt
	}
	q := cloneQueue(&qs.q)
	return &q, nil
}

func (s *Store) QueueDelete(_ context.Context, region, account, name string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := queueKey{region, account, name}
	qs, ok := s.queues[k]
	if !ok {
		return baton.ErrNotFound
	}
	delete(s.queues, k)
	delete(s.byID, qs.q.ID)
	s.deleted[k] = now
	return nil
}

func (s *Store) QueuePurge(_ context.Context, p baton.QueuePurgeParams) error {
	qs := s.lookup(p.Region, p.Account, p.Name)
	if qs == nil {
		return baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.q.PurgedAt.After(p.PurgedCutoff) {
		return baton.ErrPurgedRecently
	}
	fresh := s.newQueueState(&qs.q)
	fresh.q.PurgedAt = p.Now
	fresh.seq = qs.seq
	// Every field but the lock is fresh's.
	qs.q, qs.es, qs.ids, qs.ready, qs.hidden, qs.leasedHidden = fresh.q, fresh.es, fresh.ids, fresh.ready, fresh.hidden, 0
	qs.groups, qs.groupTab, qs.first, qs.next, qs.extras = fresh.groups, fresh.groupTab, nil, nil, fresh.extras
	qs.order, qs.dirty = nil, nil
	qs.senders, qs.senderIdx, qs.dedup = nil, nil, fresh.dedup
	return nil
}

func cloneQueue(q *baton.Queue) baton.Queue {
	c := *q
	if q.Tags != nil {
		c.Tags = make(map[string]string, len(q.Tags))
		for k, v := range q.Tags {
			c.Tags[k] = v
		}
	}
	return c
}
