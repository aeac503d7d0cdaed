package pebblestore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-sqs/baton"
)

// QueueCreate stores the queue and returns once it is committed.
func (s *Store) QueueCreate(ctx context.Context, p baton.QueueCreateParams) error {
	if err := s.writable(); err != nil {
		return err
	}
	put, err := newQueuePut(p.Queue)
	if err != nil {
		return fmt.Errorf("pebblestore: encode queue: %w", err)
	}
	s.qmu.Lock()
	qm := held{unlock: s.qmu.Unlock}
	defer qm.release()
	i := s.lockQueue(p.Queue.ID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	name := queueName{p.Queue.Region, p.Queue.Account, p.Queue.Name}
	s.queueWrites.add(name)
	err = s.index.QueueCreate(ctx, p)
	var changes []change
	if err == nil {
		changes = []change{s.queueWrite(name, put)}
	} else {
		s.queueWrites.done(name)
	}
	// A refusal waits too: it must not rest on an uncommitted queue.
	b := s.w.enqueue(changes, nil)
	sl.release()
	qm.release()
	if werr := b.wait(ctx); werr != nil {
		return werr
	}
	return err
}

// QueueGet answers from memory, once what it saw of the queue is
// committed.
func (s *Store) QueueGet(ctx context.Context, region, account, name string) (*baton.Queue, error) {
	q, err := s.index.QueueGet(ctx, region, account, name)
	if s.queueWrites.pending(queueName{region, account, name}) {
		if werr := s.queuesCommitted(ctx); werr != nil {
			return nil, werr
		}
	}
	return q, err
}

// QueueList answers from memory, once what it saw of the queues it may
// list is committed.
func (s *Store) QueueList(ctx context.Context, p baton.QueueListParams) ([]*baton.Queue, error) {
	qs, err := s.index.QueueList(ctx, p)
	if s.queueWrites.listed(p) {
		if werr := s.queuesCommitted(ctx); werr != nil {
			return nil, werr
		}
	}
	return qs, err
}

// queueWrite counts c, a queue-level change of the queue named, as
// uncommitted until it commits; the caller raised queueWrites before
// changing the index.
func (s *Store) queueWrite(name queueName, c change) change {
	return &queueWrite{change: c, pending: &s.queueWrites, name: name}
}

// queuesCommitted returns once every queue-level change made so far is
// committed: after the latest commit, which holds them all (they are
// queued under qmu, with the index change). A read that saw a change in
// memory checked, after it read, that the change was pending.
func (s *Store) queuesCommitted(ctx context.Context) error {
	s.qmu.Lock()
	b := s.w.enqueue(nil, nil)
	s.qmu.Unlock()
	return b.wait(ctx)
}

// QueueUpdate changes the queue and returns once the change is committed.
func (s *Store) QueueUpdate(ctx context.Context, p baton.QueueUpdateParams) (*baton.Queue, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	s.qmu.Lock()
	qm := held{unlock: s.qmu.Unlock}
	defer qm.release()
	name := queueName{p.Region, p.Account, p.Name}
	s.queueWrites.add(name)
	q, err := s.index.QueueUpdate(ctx, p)
	if err != nil {
		s.queueWrites.done(name)
		qm.release()
		return nil, err
	}
	put, err := newQueuePut(q)
	if err != nil {
		s.queueWrites.done(name)
		qm.release()
		return nil, fmt.Errorf("pebblestore: encode queue: %w", err)
	}
	b := s.w.enqueue([]change{s.queueWrite(name, put)}, nil)
	qm.release()
	if err := b.wait(ctx); err != nil {
		return nil, err
	}
	return q, nil
}

// QueueDelete deletes the queue, its messages and deduplication keys, and
// records when, in one change.
func (s *Store) QueueDelete(ctx context.Context, region, account, name string, now time.Time) error {
	if err := s.writable(); err != nil {
		return err
	}
	s.qmu.Lock()
	qm := held{unlock: s.qmu.Unlock}
	defer qm.release()
	q, err := s.index.QueueGet(ctx, region, account, name)
	if err != nil {
		qm.release()
		return err
	}
	i := s.lockQueue(q.ID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	qn := queueName{region, account, name}
	s.queueWrites.add(qn)
	err = s.index.QueueDelete(ctx, region, account, name, now)
	var b *batch
	if err == nil {
		b = s.w.enqueue([]change{s.queueWrite(qn, &queueDrop{id: q.ID, region: region, account: account, name: name, at: now})}, nil)
	} else {
		s.queueWrites.done(qn)
	}
	sl.release()
	qm.release()
	if err != nil {
		return err
	}
	return b.wait(ctx)
}

// QueuePurge deletes the queue's messages and deduplication keys and
// records when, in one change. The sequence counter goes on.
func (s *Store) QueuePurge(ctx context.Context, p baton.QueuePurgeParams) error {
	if err := s.writable(); err != nil {
		return err
	}
	s.qmu.Lock()
	qm := held{unlock: s.qmu.Unlock}
	defer qm.release()
	q, err := s.index.QueueGet(ctx, p.Region, p.Account, p.Name)
	if err != nil {
		qm.release()
		return err
	}
	// The queue as the purge leaves it (qmu keeps it so meanwhile).
	q.PurgedAt = p.Now
	put, err := newQueuePut(q)
	if err != nil {
		qm.release()
		return fmt.Errorf("pebblestore: encode queue: %w", err)
	}
	i := s.lockQueue(q.ID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	name := queueName{p.Region, p.Account, p.Name}
	s.queueWrites.add(name)
	err = s.index.QueuePurge(ctx, p)
	var b *batch
	if err != nil {
		s.queueWrites.done(name)
	} else {
		// Every message the queue holds or had came in, by send or move,
		// under this stripe's lock with a pos taken from s.pos: they are
		// all at most through, and later ones above it.
		b = s.w.enqueue([]change{s.queueWrite(name, &queuePurge{put: put, through: s.pos.Load()})}, nil)
	}
	sl.release()
	qm.release()
	if err != nil {
		return err
	}
	return b.wait(ctx)
}

// queueName names a queue in pendingQueues.
type queueName struct{ region, account, name string }

// topicsName stands in pendingQueues for the changes of SNS topics and
// subscriptions: no queue has an empty region.
var topicsName = queueName{name: "SNS topics"}

// pendingQueues counts the queue-level changes not committed yet, by the
// name of their queue.
type pendingQueues struct {
	// n counts them all: while it is 0, as almost always, reads look no
	// further.
	n  atomic.Int64
	mu sync.Mutex
	by map[queueName]int
}

// add counts a change of queue q, before the index makes it.
func (p *pendingQueues) add(q queueName) {
	p.mu.Lock()
	if p.by == nil {
		p.by = make(map[queueName]int)
	}
	p.by[q]++
	p.mu.Unlock()
	p.n.Add(1)
}

// done uncounts a change of queue q: committed, or not made.
func (p *pendingQueues) done(q queueName) {
	p.mu.Lock()
	if p.by[q]--; p.by[q] <= 0 {
		delete(p.by, q)
	}
	p.mu.Unlock()
	p.n.Add(-1)
}

// pending reports whether queue q has a change not committed yet.
func (p *pendingQueues) pending(q queueName) bool {
	if p.n.Load() == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.by[q] > 0
}

// listed reports whether a queue that lp may list has a change not
// committed yet.
func (p *pendingQueues) listed(lp baton.QueueListParams) bool {
	if p.n.Load() == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for q := range p.by {
		if q == topicsName {
			continue
		}
		if (lp.Region == "" || q.region == lp.Region) && (lp.Account == "" || q.account == lp.Account) &&
			strings.HasPrefix(q.name, lp.Prefix) {
			return true
		}
	}
	return false
}
