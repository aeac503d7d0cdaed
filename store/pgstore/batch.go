package pgstore

import (
	"context"

	"github.com/baton-sqs/baton"
)

// MessageDeleteBatch deletes in a round with others (group.go), each entry
// as MessageDelete does, in entry order. Deleting a live lease of a FIFO
// queue (p.RequireLive) unblocks its group, so the other servers hear of
// it once the round commits.
func (s *Store) MessageDeleteBatch(ctx context.Context, p baton.MessageDeleteBatchParams) ([]baton.LeaseOutcome, error) {
	o := &op{kind: opDelete, queueID: p.QueueID, now: p.Now, requireLive: p.RequireLive, entries: make([]leaseEntry, len(p.Entries))}
	for i, en := range p.Entries {
		o.entries[i] = leaseEntry{MessageID: en.MessageID, Epoch: en.Epoch}
	}
	outs, err := s.lease(ctx, o)
	if err != nil {
		return nil, err
	}
	for _, out := range outs {
		if p.RequireLive && out.Result == baton.LeaseCurrent {
			s.wake.add(p.QueueID)
			break
		}
	}
	return outs, nil
}

// MessageChangeVisibilityBatch changes leases in a round with others, each
// entry as MessageChangeVisibility does, in entry order; the other servers
// hear of the releases once the round commits.
func (s *Store) MessageChangeVisibilityBatch(ctx context.Context, p baton.MessageChangeVisibilityBatchParams) ([]baton.LeaseOutcome, error) {
	o := &op{kind: opChange, queueID: p.QueueID, now: p.Now, anyLease: p.AnyLease, unreceive: p.Unreceive,
		entries: make([]leaseEntry, len(p.Entries))}
	for i, en := range p.Entries {
		o.entries[i] = leaseEntry{MessageID: en.MessageID, Epoch: en.Epoch, VisibleAt: en.VisibleAt}
	}
	outs, err := s.lease(ctx, o)
	if err != nil {
		return nil, err
	}
	s.wakeReleased(o)
	return outs, nil
}
