package pebblestore

import (
	"github.com/baton-sqs/baton/internal/leaf/ids"
)

// held is a lock a call releases by hand, before it waits for its commit,
// and also defers releasing: should the call panic (net/http recovers a
// handler's panic and serves on), a stripe left locked would hang every
// queue on it. release is idempotent.
type held struct {
	unlock func()
	done   bool
}

func (h *held) release() {
	if !h.done {
		h.done = true
		h.unlock()
	}
}

// stripe returns the index of the lock of queue id.
func stripe(id uint64) int { return int((id * 0x9E3779B97F4A7C15) >> 58) }

// lockQueue locks the stripe of queue id and returns its index.
func (s *Store) lockQueue(id uint64) int {
	i := stripe(id)
	s.stripes[i].Lock()
	return i
}

// expired is the index's ExpiredFunc; the caller holds the queue's stripe.
func (s *Store) expired(queueID uint64, messageID string) {
	i := stripe(queueID)
	s.dropped[i] = append(s.dropped[i], messageID)
}

// takeDropped returns the deletions of the messages of queueID the index
// dropped since the last call; the caller holds the queue's stripe i.
func (s *Store) takeDropped(i int, queueID uint64) []change {
	if len(s.dropped[i]) == 0 {
		return nil
	}
	out := make([]change, 0, len(s.dropped[i]))
	for _, id := range s.dropped[i] {
		if pos, ok := s.forget(i, queueID, id); ok {
			out = append(out, &msgDelete{queueID: queueID, pos: pos})
		}
	}
	s.dropped[i] = s.dropped[i][:0]
	return out
}

// remember records the pos of a message of queueID; the caller holds the
// queue's stripe i.
func (s *Store) remember(i int, queueID uint64, id string, pos int64) {
	q := s.rows[i][queueID]
	if q == nil {
		q = new(ids.Map[int64])
		s.rows[i][queueID] = q
	}
	q.Put(id, pos)
}

// rowOf returns the pos of a message of queueID, if it has one; the caller
// holds the queue's stripe i.
func (s *Store) rowOf(i int, queueID uint64, id string) (int64, bool) {
	q := s.rows[i][queueID]
	if q == nil {
		return 0, false
	}
	return q.Get(id)
}

// forget drops and returns the pos of a message of queueID; the caller
// holds the queue's stripe i.
func (s *Store) forget(i int, queueID uint64, id string) (int64, bool) {
	q := s.rows[i][queueID]
	if q == nil {
		return 0, false
	}
	pos, ok := q.Get(id)
	if ok {
		q.Delete(id)
	}
	return pos, ok
}

// lockQueues locks the stripes of the queues, in index order, and returns
// the function that unlocks them.
func (s *Store) lockQueues(ids []uint64) func() {
	a := stripe(ids[0])
	if len(ids) == 1 || stripe(ids[1]) == a {
		s.stripes[a].Lock()
		return s.stripes[a].Unlock
	}
	b := stripe(ids[1])
	if b < a {
		a, b = b, a
	}
	s.stripes[a].Lock()
	s.stripes[b].Lock()
	return func() {
		s.stripes[b].Unlock()
		s.stripes[a].Unlock()
	}
}
