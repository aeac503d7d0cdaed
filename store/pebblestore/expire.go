package pebblestore

import (
	"context"
	"time"
)

// MessageExpire deletes the queue's messages sent before cutoff and
// returns once the deletions are committed.
func (s *Store) MessageExpire(ctx context.Context, queueID uint64, cutoff time.Time) (int, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	i := s.lockQueue(queueID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	n, err := s.index.MessageExpire(ctx, queueID, cutoff)
	changes := s.takeDropped(i)
	if err != nil || len(changes) == 0 {
		sl.release()
		return n, err
	}
	b := s.w.enqueue(changes, nil)
	sl.release()
	if err := b.wait(ctx); err != nil {
		return 0, err
	}
	return n, nil
}
