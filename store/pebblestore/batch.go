package pebblestore

import (
	"context"

	"github.com/baton-sqs/baton"
)

// MessageDeleteBatch deletes by receipts' leases and returns once every
// deletion is committed, in one commit. The outcomes' messages carry their
// lease state only: the payloads stay on disk unread.
func (s *Store) MessageDeleteBatch(ctx context.Context, p baton.MessageDeleteBatchParams) ([]baton.LeaseOutcome, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	i := s.lockQueue(p.QueueID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	// The rows, read before the index forgets the messages.
	rows := make([]int64, len(p.Entries))
	for j, en := range p.Entries {
		rows[j], _ = s.rowOf(p.QueueID, en.MessageID)
	}
	outs, err := s.index.MessageDeleteBatch(ctx, p)
	if err != nil {
		sl.release()
		return nil, err
	}
	changes := make([]change, 0, len(outs))
	for j, out := range outs {
		if out.Message == nil || !baton.DeleteRemoves(out.Result, p.RequireLive) {
			continue // gone, or kept
		}
		changes = append(changes, &msgDelete{queueID: p.QueueID, pos: rows[j]})
	}
	// With nothing deleted the call still waits, for the commit of
	// whatever it saw.
	b := s.w.enqueue(changes, nil)
	sl.release()
	if err := b.wait(ctx); err != nil {
		return nil, err
	}
	return outs, nil
}

// MessageChangeVisibilityBatch moves the ends of leases and returns once
// every change is committed, in one commit. The outcomes' messages carry
// their lease state only.
func (s *Store) MessageChangeVisibilityBatch(ctx context.Context, p baton.MessageChangeVisibilityBatchParams) ([]baton.LeaseOutcome, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	return s.changeVisibilityBatch(ctx, p)
}

// changeVisibilityBatch is MessageChangeVisibilityBatch, taken even while
// the store refuses changes.
func (s *Store) changeVisibilityBatch(ctx context.Context, p baton.MessageChangeVisibilityBatchParams) ([]baton.LeaseOutcome, error) {
	i := s.lockQueue(p.QueueID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	outs, err := s.index.MessageChangeVisibilityBatch(ctx, p)
	if err != nil {
		sl.release()
		return nil, err
	}
	changes := make([]change, 0, len(outs))
	for j, out := range outs {
		if !out.Result.Changed() {
			continue
		}
		pos, ok := s.rowOf(p.QueueID, p.Entries[j].MessageID)
		if !ok {
			continue
		}
		m := *out.Message
		m.VisibleAt = p.Entries[j].VisibleAt
		if p.Unreceive && out.Result == baton.LeaseCurrent && m.ReceiveCount > 0 {
			m.ReceiveCount-- // as the index did
		}
		changes = append(changes, stateOf(p.QueueID, pos, &m))
	}
	b := s.w.enqueue(changes, nil)
	sl.release()
	if err := b.wait(ctx); err != nil {
		return nil, err
	}
	return outs, nil
}
