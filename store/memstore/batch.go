package memstore

import (
	"context"

	"github.com/baton-sqs/baton"
)

// MessageDeleteBatch deletes entry by entry, as MessageDelete does; the
// outcomes' messages carry their payloads. Memory has nothing to make
// durable, so a batch costs what its entries cost.
func (s *Store) MessageDeleteBatch(ctx context.Context, p baton.MessageDeleteBatchParams) ([]baton.LeaseOutcome, error) {
	if s.lookupID(p.QueueID) == nil {
		return nil, baton.ErrNotFound
	}
	out := make([]baton.LeaseOutcome, len(p.Entries))
	for i, en := range p.Entries {
		o, err := s.MessageDelete(ctx, baton.MessageDeleteParams{
			QueueID: p.QueueID, MessageID: en.MessageID, Epoch: en.Epoch, Now: p.Now, RequireLive: p.RequireLive,
		})
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	return out, nil
}

// MessageChangeVisibilityBatch changes leases entry by entry, as
// MessageChangeVisibility does; the outcomes' messages carry their
// payloads.
func (s *Store) MessageChangeVisibilityBatch(ctx context.Context, p baton.MessageChangeVisibilityBatchParams) ([]baton.LeaseOutcome, error) {
	if s.lookupID(p.QueueID) == nil {
		return nil, baton.ErrNotFound
	}
	out := make([]baton.LeaseOutcome, len(p.Entries))
	for i, en := range p.Entries {
		o, err := s.changeVisibility(baton.MessageChangeVisibilityParams{
			QueueID: p.QueueID, MessageID: en.MessageID, Epoch: en.Epoch, Now: p.Now, VisibleAt: en.VisibleAt,
			AnyLease: p.AnyLease,
		}, p.Unreceive)
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	return out, nil
}
