package pebblestore

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

// droppedMsg is a message the index dropped as past retention.
type droppedMsg struct {
	queueID uint64
	pos     int64
}

// expired is the index's ExpiredFunc; the caller holds the queue's stripe.
func (s *Store) expired(queueID uint64, _ string, pos uint64) {
	i := stripe(queueID)
	s.dropped[i] = append(s.dropped[i], droppedMsg{queueID, int64(pos)})
}

// takeDropped returns the deletions of the messages the index dropped
// from the queues of stripe i since the last call; the caller holds the
// stripe.
func (s *Store) takeDropped(i int) []change {
	if len(s.dropped[i]) == 0 {
		return nil
	}
	out := make([]change, 0, len(s.dropped[i]))
	for _, d := range s.dropped[i] {
		out = append(out, &msgDelete{queueID: d.queueID, pos: d.pos})
	}
	s.dropped[i] = s.dropped[i][:0]
	return out
}

// remember records the pos of a message of queueID in the index; the
// caller holds the queue's stripe.
func (s *Store) remember(queueID uint64, id string, pos int64) {
	s.index.SetKey(queueID, id, uint64(pos))
}

// rowOf returns the pos of a message of queueID, if the index holds the
// message; the caller holds the queue's stripe.
func (s *Store) rowOf(queueID uint64, id string) (int64, bool) {
	pos, ok := s.index.Key(queueID, id)
	return int64(pos), ok
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
