package pebblestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/cockroachdb/pebble/v2"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
)

// scan calls fn with each key in [lower, upper) of the log and its value,
// in key order. Neither outlives the call.
func (s *Store) scan(lower, upper []byte, fn func(k, v []byte) error) error {
	return scanLog(s.db, lower, upper, fn)
}

func scanLog(db *pebble.DB, lower, upper []byte, fn func(k, v []byte) error) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// span returns the bounds of the keys of a kind.
func span(kind byte) (lower, upper []byte) { return []byte{kind}, []byte{kind + 1} }

// load rebuilds the index from the log: queues with their sequence
// counters and deduplication keys, deleted-queue tombstones, then every
// message without its payload, in queue order. It returns the move tasks,
// for the writer.
func (s *Store) load(ctx context.Context) (map[string]baton.MoveTask, error) {
	if err := s.loadQueues(); err != nil {
		return nil, err
	}
	if err := s.loadTopics(ctx); err != nil {
		return nil, err
	}
	tasks := make(map[string]baton.MoveTask)
	lo, hi := span(kindTask)
	err := s.scan(lo, hi, func(k, v []byte) error {
		t, err := decodeTask(string(k[1:]), v)
		if err != nil {
			return fmt.Errorf("move task %q: %w", k[1:], err)
		}
		tasks[t.Handle] = t
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load move tasks: %w", err)
	}
	return tasks, s.loadMessages(ctx)
}

func (s *Store) loadQueues() error {
	queues := make(map[uint64]*memstore.QueueRestoreParams)
	lo, hi := span(kindQueue)
	err := s.scan(lo, hi, func(k, v []byte) error {
		if len(k) != 9 {
			return errBadRecord
		}
		id := queueIDOf(k)
		q, err := decodeQueue(id, v)
		if err != nil {
			return fmt.Errorf("queue %d: %w", id, err)
		}
		queues[id] = &memstore.QueueRestoreParams{Queue: q}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load queues: %w", err)
	}
	lo, hi = span(kindSeq)
	err = s.scan(lo, hi, func(k, v []byte) error {
		if q := queues[queueIDOf(k)]; q != nil {
			q.LastSequenceNumber = string(v)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load sequence numbers: %w", err)
	}
	lo, hi = span(kindDedup)
	err = s.scan(lo, hi, func(k, v []byte) error {
		id, at, ok := parseQueueKey(k)
		if !ok {
			return errBadRecord
		}
		q := queues[id]
		if q == nil {
			return nil
		}
		d := memstore.DedupEntry{Key: string(k[17:]), At: decTime(int64(at))}
		var err error
		if d.MessageID, d.SequenceNumber, err = decodeDedup(v); err != nil {
			return err
		}
		q.Dedup = append(q.Dedup, d)
		return nil
	})
	if err != nil {
		return fmt.Errorf("load deduplication keys: %w", err)
	}
	for _, q := range queues {
		if err := s.index.QueueRestore(*q); err != nil {
			return fmt.Errorf("restore queue %s/%s/%s: %w", q.Queue.Region, q.Queue.Account, q.Queue.Name, err)
		}
	}
	lo, hi = span(kindTombstone)
	err = s.scan(lo, hi, func(k, v []byte) error {
		region, account, name, err := decodeTombstoneKey(k)
		if err != nil {
			return err
		}
		at, err := decodeNanos(v)
		if err != nil {
			return err
		}
		s.index.TombstoneRestore(region, account, name, at)
		return nil
	})
	if err != nil {
		return fmt.Errorf("load deleted queues: %w", err)
	}
	return nil
}

// queueIDOf reads the queue id of a key.
func queueIDOf(k []byte) uint64 {
	if len(k) < 9 {
		return 0
	}
	return binary.BigEndian.Uint64(k[1:9])
}

// loadMessages adds every message, without payload, to the index in queue
// and pos order and sets the pos counter past the last. One goroutine reads
// and decodes records while this one builds the index.
func (s *Store) loadMessages(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches, free := make(chan []loaded, loadBuffered), make(chan []loaded, loadBuffered+2)
	// Batches go back to the reader once restored: the load leaves little
	// garbage behind.
	for range loadBuffered + 2 {
		free <- make([]loaded, 0, loadBatch)
	}
	errc := make(chan error, 1)
	go func() {
		defer close(batches)
		errc <- s.readMessages(ctx, batches, free)
	}()
	var last int64
	restored := 0
	var err error
	for batch := range batches {
		for i := 0; i < len(batch) && err == nil; i++ {
			l := &batch[i]
			last = max(last, l.pos)
			switch rerr := s.index.MessageRestore(l.queueID, &l.m, uint64(l.pos)); {
			case errors.Is(rerr, baton.ErrNotFound):
				// None should be: a queue's deletion deletes its
				// messages in the same batch. Skip rather than refuse
				// to start.
			case rerr != nil:
				err = fmt.Errorf("restore message %s: %w", l.m.ID, rerr)
				cancel()
			default:
				restored++
			}
		}
		clear(batch)
		free <- batch[:0]
	}
	if rerr := <-errc; err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("load messages: %w", err)
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

// loaded is a message read from the log for the index.
type loaded struct {
	queueID uint64
	pos     int64
	m       baton.Message
}

// The load passes messages from its reader in batches of loadBatch, up to
// loadBuffered batches ahead.
const loadBatch, loadBuffered = 1024, 4

// readMessages reads and decodes every message's state record, in key
// order, into batches taken from free and sent on batches.
func (s *Store) readMessages(ctx context.Context, batches, free chan []loaded) error {
	// Many messages share a group, a sender and a dead-letter source:
	// keep one copy of each, up to a bound.
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
	send := func(batch []loaded) bool {
		select {
		case batches <- batch:
			return true
		case <-ctx.Done():
			return false
		}
	}
	batch := <-free
	lo, hi := span(kindState)
	err := s.scan(lo, hi, func(k, v []byte) error {
		id, pos, ok := parseQueueKey(k)
		if !ok {
			return errBadRecord
		}
		batch = append(batch, loaded{queueID: id, pos: int64(pos)})
		l := &batch[len(batch)-1]
		if err := decodeRecord(v, &l.m, intern); err != nil {
			return fmt.Errorf("message at %d: %w", pos, err)
		}
		if len(batch) < loadBatch {
			return nil
		}
		if !send(batch) {
			return ctx.Err()
		}
		select {
		case batch = <-free:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		return err
	}
	if len(batch) > 0 && !send(batch) {
		return ctx.Err()
	}
	return nil
}
