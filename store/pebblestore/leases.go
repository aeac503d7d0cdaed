package pebblestore

import (
	"context"

	"github.com/baton-sqs/baton"
)

// leaseCall runs a call that acts on one message by a receipt's lease. call
// applies it to the index, under the locks of queueIDs, and returns its
// outcome and the changes to queue; it gets the message's pos, if the
// message exists. The outcome's message gets its payload, read under the
// lock before the call.
func (s *Store) leaseCall(ctx context.Context, queueIDs []uint64, messageID string,
	call func(pos int64) (baton.LeaseOutcome, []change, error)) (baton.LeaseOutcome, error) {
	if err := s.writable(); err != nil {
		return baton.LeaseOutcome{}, err
	}
	lk := held{unlock: s.lockQueues(queueIDs)}
	defer lk.release()
	pos, ok := s.rowOf(queueIDs[0], messageID)
	var pay payload
	if ok {
		pays, err := s.payloads(queueIDs[0], []row{{messageID, pos}})
		if err != nil {
			lk.release()
			return baton.LeaseOutcome{}, err
		}
		pay, ok = pays[pos]
	}
	out, changes, err := call(pos)
	if err != nil {
		lk.release()
		return baton.LeaseOutcome{}, err
	}
	// A moved message is at its new pos in the index at once, but its
	// payload under its new key only once the move commits: until then a
	// receive from the target queue finds it pending, under the new pos.
	var moved []int64
	for _, c := range changes {
		if mv, isMove := c.(*msgMove); isMove && ok {
			mv.pay = &pay
			s.pendMu.Lock()
			s.pending[mv.pos] = pay
			s.pendMu.Unlock()
			moved = append(moved, mv.pos)
		}
	}
	b := s.w.enqueue(changes, moved)
	lk.release()
	if out.Message != nil && ok {
		if err := pay.fill(out.Message); err != nil {
			return baton.LeaseOutcome{}, err
		}
	}
	if err := b.wait(ctx); err != nil {
		return baton.LeaseOutcome{}, err
	}
	return out, nil
}

// MessageDelete deletes by a receipt's lease; the outcome's message has
// its payload.
func (s *Store) MessageDelete(ctx context.Context, p baton.MessageDeleteParams) (baton.LeaseOutcome, error) {
	return s.leaseCall(ctx, []uint64{p.QueueID}, p.MessageID, func(pos int64) (baton.LeaseOutcome, []change, error) {
		out, err := s.index.MessageDelete(ctx, p)
		if err != nil || out.Message == nil {
			return out, nil, err
		}
		if baton.DeleteRemoves(out.Result, p.RequireLive) {
			return out, []change{&msgDelete{queueID: p.QueueID, pos: pos}}, nil
		}
		return out, nil, nil
	})
}

// MessageChangeVisibility moves the end of a lease; the outcome's message
// has its payload.
func (s *Store) MessageChangeVisibility(ctx context.Context, p baton.MessageChangeVisibilityParams) (baton.LeaseOutcome, error) {
	return s.leaseCall(ctx, []uint64{p.QueueID}, p.MessageID, func(pos int64) (baton.LeaseOutcome, []change, error) {
		out, err := s.index.MessageChangeVisibility(ctx, p)
		if err != nil || !out.Result.Changed() {
			return out, nil, err
		}
		m := *out.Message
		m.VisibleAt = p.VisibleAt
		return out, []change{stateOf(p.QueueID, pos, &m)}, nil
	})
}

// MessageMove moves a message to the end of another queue; the outcome's
// message has its payload.
func (s *Store) MessageMove(ctx context.Context, p baton.MessageMoveParams) (baton.LeaseOutcome, error) {
	return s.leaseCall(ctx, []uint64{p.QueueID, p.ToQueueID}, p.MessageID, func(pos int64) (baton.LeaseOutcome, []change, error) {
		out, err := s.index.MessageMove(ctx, p)
		if err != nil || out.Result != baton.LeaseCurrent {
			return out, nil, err
		}
		to := s.pos.Add(1)
		s.remember(p.ToQueueID, p.MessageID, to)
		// The message as the index now holds it in the target queue.
		m := p.Moved(*out.Message)
		return out, []change{&msgMove{fromQueueID: p.QueueID, toQueueID: p.ToQueueID, from: pos, pos: to, rec: encodeRecord(m.ID, &m)}}, nil
	})
}
