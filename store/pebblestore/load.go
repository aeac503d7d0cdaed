package pebblestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

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

// openChecked opens the log in the data directory and rebuilds the index
// from it, once its files and records are found consistent: it refuses
// (with ErrDamaged, naming the file and what contradicts what) a MANIFEST
// or write-ahead log damaged before its end (logfiles.go), a log that lost
// its format record or fell behind its mark (mark.go), and records of
// queues the log does not hold (consistency.go). The checks and the index
// are made on the log opened read-only: a store that refuses to open
// writes nothing, and Pebble deletes none of the files a damaged MANIFEST
// no longer lists, so everything is left for `baton store check` and
// salvage. Then it opens the log for writing, raises the mark, logs what
// it loaded and returns the move tasks, for the writer.
func (s *Store) openChecked(ctx context.Context, opts Options) (map[string]baton.MoveTask, error) {
	start := time.Now()
	logDir := filepath.Join(s.dir, LogDir)
	if err := checkLogFiles(s.fs, logDir, opts.Durability); err != nil {
		return nil, err
	}
	var (
		gen   uint64
		tasks map[string]baton.MoveTask
		n     loadCounts
	)
	desc, err := pebble.Peek(logDir, s.fs)
	switch {
	case errors.Is(err, os.ErrNotExist) || err == nil && !desc.Exists:
		if err := createLog(logDir, opts); err != nil {
			return nil, err
		}
	case err == nil:
		ro := opts
		ro.readOnly = true
		if s.db, err = openLog(logDir, ro); err != nil {
			return nil, err
		}
		gen, tasks, n, err = s.checkAndLoad(ctx, logDir)
		if cerr := s.db.Close(); err == nil {
			err = cerr
		}
		s.db = nil
		if err != nil {
			return nil, damagedRead(err)
		}
	}
	// Backups are told when their checkpoint is done with the log.
	wo := opts
	wo.FS = checkpointFS{FS: opts.FS, backups: &s.backups}
	if s.db, s.diskChecks, err = openWatched(ctx, logDir, wo, s.health); err != nil {
		return nil, err
	}
	if tasks == nil {
		// A new log (or a data directory whose log is gone, which
		// openLog refuses when a mark says there was one).
		tasks = make(map[string]baton.MoveTask)
	}
	if err := s.whileLogWorks(func() error { return s.advanceMark(gen+1, false, opts.Durability) }); err != nil {
		return nil, err
	}
	s.logger.Info("pebblestore: loaded the log", "dir", logDir, "queues", n.queues, "messages", n.messages,
		"deleted_queue_names", n.tombstones, "move_tasks", len(tasks), "mark", s.gen,
		"took", time.Since(start).Round(time.Millisecond).String())
	return tasks, nil
}

// whileLogWorks runs fn, which writes to the log, and returns its error;
// or, as soon as a write of the log fails (and fn, waiting on it, never
// returns: diskFile.logFailed), the refusal, so that a start on a disk
// that fails its writes ends with the failure rather than hang.
func (s *Store) whileLogWorks(fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if err := s.health.openFailed(); err != nil {
				return err
			}
		}
	}
}

// checkAndLoad checks the log opened read-only in s.db and builds the
// index from it; it returns the log's generation, the move tasks and what
// it loaded.
func (s *Store) checkAndLoad(ctx context.Context, logDir string) (uint64, map[string]baton.MoveTask, loadCounts, error) {
	gen, marked, err := checkMark(s.fs, s.dir, s.db, newestWAL(s.fs, logDir))
	if err != nil {
		return 0, nil, loadCounts{}, err
	}
	if !marked && gen > 0 {
		// The remedy for a damaged mark file, or a file lost: the log
		// itself may be whole, but this start cannot tell.
		s.logger.Warn("pebblestore: "+MarkFile+" is missing: this start cannot check that the log kept its end "+
			"(a write-ahead log truncated or deleted would go unseen); it is written again now. "+
			"If it was not removed on purpose, run `baton store check` with the server stopped",
			"file", filepath.Join(s.dir, MarkFile), "log_mark", gen)
	}
	queues, err := queueIDs(s.db)
	if err != nil {
		return 0, nil, loadCounts{}, fmt.Errorf("load queues: %w", err)
	}
	switch orphaned, err := checkOrphans(s.db, logDir, queues); {
	case err != nil:
		return 0, nil, loadCounts{}, fmt.Errorf("check the log: %w", err)
	case len(orphaned) > 0:
		return 0, nil, loadCounts{}, orphansError(logDir, orphaned)
	}
	tasks, n, err := s.load(ctx)
	if err != nil {
		return 0, nil, n, err
	}
	s.checkBodies()
	return gen, tasks, n, nil
}

// checkBodiesUpTo is the size of log up to which Open reads every body
// too, to find a damaged table before a receive does: 64 MiB take well
// under a second to read.
const checkBodiesUpTo = 64 << 20

// checkBodies reads every message body, if the log is small enough for
// that to be cheap, and logs a damaged table it finds. The store still
// opens: each receive of a message whose body is lost answers 503, and
// `baton store check` and `salvage` say which they are.
func (s *Store) checkBodies() {
	if s.db.Metrics().DiskSpaceUsage() > checkBodiesUpTo {
		return
	}
	lo, hi := span(kindPayload)
	if err := s.scan(lo, hi, func(_, _ []byte) error { return nil }); err != nil {
		if info := pebble.ExtractDataCorruptionInfo(err); info != nil {
			s.health.corrupted(info.Path, info.Details)
		}
		s.logger.Error("pebblestore: the log holds message bodies it cannot read: receives of those messages will answer 503. "+
			"Stop the server and run `baton store check`", "err", err)
	}
}

// loadCounts counts what load restored.
type loadCounts struct{ queues, messages, tombstones int }

// load rebuilds the index from the log: queues with their sequence
// counters and deduplication keys, deleted-queue tombstones, then every
// message without its payload, in queue order. It returns the move tasks,
// for the writer.
func (s *Store) load(ctx context.Context) (map[string]baton.MoveTask, loadCounts, error) {
	var n loadCounts
	var err error
	if n.queues, n.tombstones, err = s.loadQueues(); err != nil {
		return nil, n, err
	}
	if err := s.loadTopics(ctx); err != nil {
		return nil, n, err
	}
	if err := s.loadPublishRecords(ctx); err != nil {
		return nil, n, err
	}
	tasks := make(map[string]baton.MoveTask)
	lo, hi := span(kindTask)
	err = s.scan(lo, hi, func(k, v []byte) error {
		t, err := decodeTask(string(k[1:]), v)
		if err != nil {
			return fmt.Errorf("move task %q: %w", k[1:], err)
		}
		tasks[t.Handle] = t
		return nil
	})
	if err != nil {
		return nil, n, fmt.Errorf("load move tasks: %w", err)
	}
	n.messages, err = s.loadMessages(ctx)
	return tasks, n, err
}

// loadQueues restores the queues and the names of deleted queues, and
// counts them.
func (s *Store) loadQueues() (queues, tombstones int, err error) {
	restored := make(map[uint64]*memstore.QueueRestoreParams)
	lo, hi := span(kindQueue)
	err = s.scan(lo, hi, func(k, v []byte) error {
		if len(k) != 9 {
			return errBadRecord
		}
		id := queueIDOf(k)
		q, err := decodeQueue(id, v)
		if err != nil {
			return fmt.Errorf("queue %d: %w", id, err)
		}
		restored[id] = &memstore.QueueRestoreParams{Queue: q}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("load queues: %w", err)
	}
	lo, hi = span(kindSeq)
	err = s.scan(lo, hi, func(k, v []byte) error {
		if q := restored[queueIDOf(k)]; q != nil {
			q.LastSequenceNumber = string(v)
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("load sequence numbers: %w", err)
	}
	lo, hi = span(kindDedup)
	err = s.scan(lo, hi, func(k, v []byte) error {
		id, at, ok := parseQueueKey(k)
		if !ok {
			return errBadRecord
		}
		q := restored[id]
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
		return 0, 0, fmt.Errorf("load deduplication keys: %w", err)
	}
	for _, q := range restored {
		if err := s.index.QueueRestore(*q); err != nil {
			return 0, 0, fmt.Errorf("restore queue %s/%s/%s: %w", q.Queue.Region, q.Queue.Account, q.Queue.Name, err)
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
		tombstones++
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("load deleted queues: %w", err)
	}
	return len(restored), tombstones, nil
}

// queueIDOf reads the queue id of a key.
func queueIDOf(k []byte) uint64 {
	if len(k) < 9 {
		return 0
	}
	return binary.BigEndian.Uint64(k[1:9])
}

// loadMessages adds every message, without payload, to the index in queue
// and pos order, sets the pos counter past the last and returns how many it
// added. One goroutine reads and decodes records while this one builds the
// index.
func (s *Store) loadMessages(ctx context.Context) (int, error) {
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
			// checkOrphans found every message's queue.
			if rerr := s.index.MessageRestore(l.queueID, &l.m, uint64(l.pos)); rerr != nil {
				err = fmt.Errorf("restore message %s of queue id %d: %w", l.m.ID, l.queueID, rerr)
				cancel()
			} else {
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
		return 0, fmt.Errorf("load messages: %w", err)
	}
	s.pos.Store(last)
	if restored > 100000 {
		// The heap grew in steps while the index was built; give back
		// what the steps left unused, once, rather than hold it as the
		// server's resident size.
		debug.FreeOSMemory()
	}
	return restored, nil
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
