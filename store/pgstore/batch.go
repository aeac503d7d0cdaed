package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

// MessageDeleteBatch deletes in one transaction, each entry as MessageDelete
// does, its statements sent in one round trip. Deleting a live lease of a
// FIFO queue (p.RequireLive) unblocks its group, so the other servers hear
// of it when the transaction commits.
func (s *Store) MessageDeleteBatch(ctx context.Context, p baton.MessageDeleteBatchParams) ([]baton.LeaseOutcome, error) {
	ids := make([]string, len(p.Entries))
	for i, en := range p.Entries {
		ids[i] = en.MessageID
	}
	// As in MessageChangeVisibilityBatch, a retried transaction may leave
	// it set from the try before: one needless wake-up.
	var unblocked bool
	outs, err := s.leaseBatch(ctx, p.QueueID, ids, func(b *pgx.Batch, i int) {
		en := p.Entries[i]
		b.Queue(deleteSQL, int64(p.QueueID), en.MessageID, int64(en.Epoch), p.Now, p.RequireLive)
	}, func(_ int, row pgx.Row, live *bool) (*baton.Message, error) {
		m, err := scanMessage(row, live, new(bool))
		unblocked = unblocked || err == nil && *live
		return m, err
	})
	if err != nil && !errors.Is(err, baton.ErrNotFound) {
		return nil, fmt.Errorf("pgstore: delete batch: %w", err)
	}
	if err == nil && unblocked && p.RequireLive {
		s.wake.add(p.QueueID)
	}
	return outs, err
}

// MessageChangeVisibilityBatch changes leases in one transaction, each
// entry as MessageChangeVisibility does; the other servers hear of the
// releases when it commits.
func (s *Store) MessageChangeVisibilityBatch(ctx context.Context, p baton.MessageChangeVisibilityBatchParams) ([]baton.LeaseOutcome, error) {
	ids := make([]string, len(p.Entries))
	for i, en := range p.Entries {
		ids[i] = en.MessageID
	}
	// Whether an entry released its message; a retried transaction may
	// leave it set from the try before, which costs one needless wake-up.
	var released bool
	// Which entries took effect through a later lease than their receipt's.
	superseded := make([]bool, len(ids))
	outs, err := s.leaseBatch(ctx, p.QueueID, ids, func(b *pgx.Batch, i int) {
		en := p.Entries[i]
		b.Queue(changeVisibilitySQL, int64(p.QueueID), en.MessageID, int64(en.Epoch), p.Now, en.VisibleAt, p.AnyLease)
	}, func(i int, row pgx.Row, live *bool) (*baton.Message, error) {
		var changed, r bool
		m, err := scanMessage(row, live, &changed, &r)
		superseded[i] = changed && !*live
		released = released || r
		return m, err
	})
	for i := range outs {
		if superseded[i] && outs[i].Result == baton.LeaseLapsed {
			outs[i].Result = baton.LeaseSuperseded
		}
	}
	if err != nil && !errors.Is(err, baton.ErrNotFound) {
		return nil, fmt.Errorf("pgstore: change visibility batch: %w", err)
	}
	if err == nil && released {
		s.wake.add(p.QueueID)
	}
	return outs, err
}

// leaseBatch runs one lease statement per message of ids (queued by
// queue) in a transaction that first checks that the queue exists, and
// returns the outcomes in the order of ids. The statements run in message
// id order, so two batches lock their rows in one order and cannot
// deadlock; entries for one message keep their order among themselves.
func (s *Store) leaseBatch(ctx context.Context, queueID uint64, ids []string,
	queue func(b *pgx.Batch, i int), scan func(i int, row pgx.Row, live *bool) (*baton.Message, error)) ([]baton.LeaseOutcome, error) {
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	outs := make([]baton.LeaseOutcome, len(ids))
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT EXISTS (SELECT 1 FROM baton_queues WHERE id = $1)`, int64(queueID))
		for _, i := range order {
			queue(b, i)
		}
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		var exists bool
		if err := br.QueryRow().Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return baton.ErrNotFound
		}
		for _, i := range order {
			var live bool
			m, err := scan(i, br.QueryRow(), &live)
			if errors.Is(err, pgx.ErrNoRows) {
				outs[i] = baton.LeaseOutcome{Result: baton.LeaseGone}
				continue
			}
			if err != nil {
				return err
			}
			outs[i] = outcome(m, live)
		}
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}
