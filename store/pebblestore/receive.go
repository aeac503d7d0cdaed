package pebblestore

import (
	"context"
	"fmt"

	"github.com/baton-sqs/baton"
)

// MessageReceive leases messages in memory, reads their payloads from the
// log (or from memory, for sends not committed yet) while the leases
// commit, and returns once they are committed. Messages past retention are
// deleted in the same commit.
func (s *Store) MessageReceive(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	i := s.lockQueue(p.QueueID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	msgs, err := s.index.MessageReceive(ctx, p)
	changes := s.takeDropped(i)
	if err != nil {
		sl.release()
		return nil, err
	}
	if len(msgs) == 0 && len(changes) == 0 {
		// Nothing found, nothing claimed: no commit to wait for.
		sl.release()
		return msgs, nil
	}
	rs := make([]row, 0, len(msgs))
	for _, m := range msgs {
		pos, ok := s.rowOf(p.QueueID, m.ID)
		if !ok {
			sl.release()
			return nil, fmt.Errorf("pebblestore: message %s has no pos", m.ID)
		}
		rs = append(rs, row{m.ID, pos})
		changes = append(changes, stateOf(p.QueueID, pos, m))
	}
	b := s.w.enqueue(changes, nil)
	sl.release()

	leases := make([]baton.VisibilityChange, len(msgs))
	for j, m := range msgs {
		leases[j] = baton.VisibilityChange{MessageID: m.ID, Epoch: m.Epoch, VisibleAt: p.Now}
	}
	// Read the bodies while the leases commit.
	out, err := s.withPayloads(p.QueueID, msgs, rs)
	if err == nil {
		err = b.wait(ctx)
	}
	if err != nil {
		// Nobody will hold these leases: give them back rather than leave
		// the messages hidden for the whole visibility timeout. Best
		// effort; the receives stay counted, as for an answer lost on the
		// way. Queued even while the store refuses changes: committed
		// after the leases, it frees them.
		s.changeVisibilityBatch(context.WithoutCancel(ctx), baton.MessageChangeVisibilityBatchParams{
			QueueID: p.QueueID, Now: p.Now, Entries: leases,
		})
		return nil, err
	}
	return out, nil
}
