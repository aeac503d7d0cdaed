package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
)

// load rebuilds the index from the database: queues with their sequence
// counters and deduplication keys, deleted-queue tombstones, then every
// live message without its payload, in queue order. It returns the jobs
// the reclaimer has left: queues with dead rows (see queuePurge).
func (s *Store) load(ctx context.Context) ([]reclaimJob, error) {
	queues := make(map[uint64]*memstore.QueueRestoreParams)
	// purgedPos is, per queue, the pos up to which its rows are dead.
	purgedPos := make(map[uint64]int64)
	jobs, err := s.loadQueues(ctx, queues, purgedPos)
	if err != nil {
		return nil, err
	}
	return jobs, s.loadMessages(ctx, purgedPos)
}

func (s *Store) loadQueues(ctx context.Context, queues map[uint64]*memstore.QueueRestoreParams, purgedPos map[uint64]int64) ([]reclaimJob, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, region, account, name, attributes, tags, created_at, modified_at,
		purged_at, dedup_scope, last_seq, purged_pos FROM queues`)
	if err != nil {
		return nil, fmt.Errorf("load queues: %w", err)
	}
	for rows.Next() {
		var (
			id                        int64
			q                         baton.Queue
			attrs, tags               string
			created, modified, purged int64
			lastSeq                   string
			through                   int64
		)
		if err := rows.Scan(&id, &q.Region, &q.Account, &q.Name, &attrs, &tags, &created, &modified, &purged, &q.DedupScope, &lastSeq, &through); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load queues: %w", err)
		}
		purgedPos[uint64(id)] = through
		q.ID = uint64(id)
		q.CreatedAt, q.ModifiedAt, q.PurgedAt = decTime(created), decTime(modified), decTime(purged)
		if err := json.Unmarshal([]byte(attrs), &q.Attributes); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load queue %s: attributes: %w", q.Name, err)
		}
		if tags != "" {
			if err := json.Unmarshal([]byte(tags), &q.Tags); err != nil {
				rows.Close()
				return nil, fmt.Errorf("load queue %s: tags: %w", q.Name, err)
			}
		}
		queues[q.ID] = &memstore.QueueRestoreParams{Queue: &q, LastSequenceNumber: lastSeq}
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("load queues: %w", err)
	}

	rows, err = s.rdb.QueryContext(ctx, `SELECT queue_id, key, message_id, seq, at FROM dedup`)
	if err != nil {
		return nil, fmt.Errorf("load deduplication keys: %w", err)
	}
	for rows.Next() {
		var (
			id int64
			d  memstore.DedupEntry
			at int64
		)
		if err := rows.Scan(&id, &d.Key, &d.MessageID, &d.SequenceNumber, &at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load deduplication keys: %w", err)
		}
		d.At = decTime(at)
		if q := queues[uint64(id)]; q != nil {
			q.Dedup = append(q.Dedup, d)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("load deduplication keys: %w", err)
	}
	// The counts include dead rows: they size the index's maps, no more.
	var jobs []reclaimJob
	rows, err = s.rdb.QueryContext(ctx, `SELECT queue_id, count(*), min(pos) FROM messages GROUP BY queue_id`)
	if err != nil {
		return nil, fmt.Errorf("count messages: %w", err)
	}
	for rows.Next() {
		var id, first int64
		var n int
		if err := rows.Scan(&id, &n, &first); err != nil {
			rows.Close()
			return nil, fmt.Errorf("count messages: %w", err)
		}
		q := queues[uint64(id)]
		switch {
		case q == nil:
			jobs = append(jobs, reclaimJob{queueID: uint64(id), through: dropped})
			continue
		case first <= purgedPos[uint64(id)]:
			jobs = append(jobs, reclaimJob{queueID: uint64(id), through: purgedPos[uint64(id)]})
		}
		q.Messages = n
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("count messages: %w", err)
	}
	for _, q := range queues {
		if err := s.index.QueueRestore(*q); err != nil {
			return nil, fmt.Errorf("restore queue %s/%s/%s: %w", q.Queue.Region, q.Queue.Account, q.Queue.Name, err)
		}
	}

	rows, err = s.rdb.QueryContext(ctx, `SELECT region, account, name, deleted_at FROM deleted_queues`)
	if err != nil {
		return nil, fmt.Errorf("load deleted queues: %w", err)
	}
	for rows.Next() {
		var region, account, name string
		var at int64
		if err := rows.Scan(&region, &account, &name, &at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load deleted queues: %w", err)
		}
		s.index.TombstoneRestore(region, account, name, decTime(at))
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("load deleted queues: %w", err)
	}
	return jobs, nil
}

// loadMessages adds every live message, without payload, to the index in
// pos order and sets the pos counter past the last. One goroutine reads and
// decodes rows while this one builds the index.
func (s *Store) loadMessages(ctx context.Context, purgedPos map[uint64]int64) error {
	type loaded struct {
		queueID uint64
		pos     int64
		m       baton.Message
	}
	const batchSize, buffered = 1024, 4
	batches := make(chan []loaded, buffered)
	// Batches go back to the reader once restored: the load leaves little
	// garbage behind.
	free := make(chan []loaded, buffered+2)
	for range buffered + 2 {
		free <- make([]loaded, 0, batchSize)
	}
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(batches)
		errc <- func() error {
			rows, err := s.rdb.QueryContext(ctx, `SELECT pos, queue_id, id, state FROM messages ORDER BY pos`)
			if err != nil {
				return err
			}
			defer rows.Close()
			// Many messages share a group, a sender and a dead-letter
			// source: keep one copy of each, up to a bound.
			shared := make(map[string]string)
			intern := func(b []byte) string {
				if v, ok := shared[string(b)]; ok {
					return v
				}
				v := string(b)
				if len(shared) < 4096 {
					shared[v] = v
				}
				return v
			}
			batch := <-free
			// Scan's arguments escape: one set for every row, not one
			// allocation a row.
			var (
				l       loaded
				queueID int64
				state   sql.RawBytes
			)
			for rows.Next() {
				l = loaded{}
				if err := rows.Scan(&l.pos, &queueID, &l.m.ID, &state); err != nil {
					return err
				}
				l.queueID = uint64(queueID)
				if err := decodeState(state, &l.m, intern); err != nil {
					return fmt.Errorf("message %s: %w", l.m.ID, err)
				}
				if batch = append(batch, l); len(batch) == batchSize {
					select {
					case batches <- batch:
					case <-ctx.Done():
						return ctx.Err()
					}
					select {
					case batch = <-free:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if len(batch) > 0 {
				select {
				case batches <- batch:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}()
	}()

	var last int64
	restored := 0
	for batch := range batches {
		for i := range batch {
			l := &batch[i]
			last = max(last, l.pos)
			if l.pos <= purgedPos[l.queueID] {
				continue // purged; the reclaimer deletes the row
			}
			// A message of no queue is dead too: its queue was
			// deleted.
			err := s.index.MessageRestore(l.queueID, &l.m, uint64(l.pos))
			if errors.Is(err, baton.ErrNotFound) {
				continue
			}
			if err != nil {
				cancel()
				for range batches {
				}
				return fmt.Errorf("restore message %s: %w", l.m.ID, err)
			}
			restored++
		}
		clear(batch)
		free <- batch[:0]
	}
	if err := <-errc; err != nil {
		return fmt.Errorf("load messages: %w", err)
	}
	// Positions only grow: a purge's mark must stay below every message
	// sent after it, also once the rows it covered are gone.
	for _, through := range purgedPos {
		last = max(last, through)
	}
	s.pos.Store(last)
	if restored > 100000 {
		// The heap grew in steps while the index was built; give back
		// what the steps left unused, once, rather than hold it as the
		// server's resident size.
		debug.FreeOSMemory()
	}
	return nil
}
