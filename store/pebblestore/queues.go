package pebblestore

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-sqs/baton"
)

// QueueCreate stores the queue and returns once it is committed.
func (s *Store) QueueCreate(ctx context.Context, p baton.QueueCreateParams) error {
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
	s.queueWrites.Add(1)
	err = s.index.QueueCreate(ctx, p)
	var changes []change
	if err == nil {
		changes = []change{s.queueWrite(put)}
	} else {
		s.queueWrites.Add(-1)
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

// QueueGet answers from memory, once what it saw is committed.
func (s *Store) QueueGet(ctx context.Context, region, account, name string) (*baton.Queue, error) {
	q, err := s.index.QueueGet(ctx, region, account, name)
	if werr := s.queuesCommitted(ctx); werr != nil {
		return nil, werr
	}
	return q, err
}

// QueueList answers from memory, once what it saw is committed.
func (s *Store) QueueList(ctx context.Context, p baton.QueueListParams) ([]*baton.Queue, error) {
	qs, err := s.index.QueueList(ctx, p)
	if werr := s.queuesCommitted(ctx); werr != nil {
		return nil, werr
	}
	return qs, err
}

// queueWrite counts c, a queue-level change, as uncommitted until it
// commits; the caller raised queueWrites before changing the index.
func (s *Store) queueWrite(c change) change {
	return &queueWrite{change: c, pending: &s.queueWrites}
}

// queuesCommitted returns once every queue-level change a read may have
// seen in memory is committed: at once when none is pending, as almost
// always; else after the latest commit, which holds them all (they are
// queued under qmu, with the index change).
func (s *Store) queuesCommitted(ctx context.Context) error {
	if s.queueWrites.Load() == 0 {
		return nil
	}
	s.qmu.Lock()
	b := s.w.enqueue(nil, nil)
	s.qmu.Unlock()
	return b.wait(ctx)
}

// QueueUpdate changes the queue and returns once the change is committed.
func (s *Store) QueueUpdate(ctx context.Context, p baton.QueueUpdateParams) (*baton.Queue, error) {
	s.qmu.Lock()
	qm := held{unlock: s.qmu.Unlock}
	defer qm.release()
	s.queueWrites.Add(1)
	q, err := s.index.QueueUpdate(ctx, p)
	if err != nil {
		s.queueWrites.Add(-1)
		qm.release()
		return nil, err
	}
	put, err := newQueuePut(q)
	if err != nil {
		s.queueWrites.Add(-1)
		qm.release()
		return nil, fmt.Errorf("pebblestore: encode queue: %w", err)
	}
	b := s.w.enqueue([]change{s.queueWrite(put)}, nil)
	qm.release()
	if err := b.wait(ctx); err != nil {
		return nil, err
	}
	return q, nil
}

// QueueDelete deletes the queue, its messages and deduplication keys, and
// records when, in one change.
func (s *Store) QueueDelete(ctx context.Context, region, account, name string, now time.Time) error {
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
	s.queueWrites.Add(1)
	err = s.index.QueueDelete(ctx, region, account, name, now)
	var b *batch
	if err == nil {
		b = s.w.enqueue([]change{s.queueWrite(&queueDrop{id: q.ID, region: region, account: account, name: name, at: now})}, nil)
	} else {
		s.queueWrites.Add(-1)
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
	s.queueWrites.Add(1)
	err = s.index.QueuePurge(ctx, p)
	var b *batch
	if err != nil {
		s.queueWrites.Add(-1)
	} else {
		// Every message the queue holds or had came in, by send or move,
		// under this stripe's lock with a pos taken from s.pos: they are
		// all at most through, and later ones above it.
		b = s.w.enqueue([]change{s.queueWrite(&queuePurge{put: put, through: s.pos.Load()})}, nil)
	}
	sl.release()
	qm.release()
	if err != nil {
		return err
	}
	return b.wait(ctx)
}
