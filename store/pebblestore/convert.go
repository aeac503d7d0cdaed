package pebblestore

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/pebblestore/internal/sqliteread"
)

// convertingDir is where a conversion writes the log before it renames it
// to LogDir.
const convertingDir = LogDir + ".converting"

// convertBatchBytes is about how much a conversion writes per batch.
const convertBatchBytes = 4 << 20

// convertStep, when tests set it, is called after each step of a
// conversion; an error it returns stops the conversion there, as a crash
// would.
var convertStep func(step string) error

func step(name string) error {
	if convertStep == nil {
		return nil
	}
	return convertStep(name)
}

// convert converts the SQLite store of releases before the Pebble log, if
// dir holds one, into a log. It reads the database, writes the log into
// convertingDir, syncs it and renames it to LogDir, then removes the
// database. A crash at any point leaves either the database, intact (the
// next Open starts over), or the complete log (the next Open removes what
// is left of the database).
func convert(ctx context.Context, dir, region string, opts Options) error {
	fs := opts.FS
	db := filepath.Join(dir, sqliteread.DatabaseFile)
	switch _, err := fs.Stat(filepath.Join(dir, LogDir)); {
	case err == nil:
		return removeSQLite(dir, opts)
	case !errors.Is(err, iofs.ErrNotExist):
		return err
	}
	switch _, err := fs.Stat(db); {
	case errors.Is(err, iofs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	start := time.Now()
	opts.Logger.Info("converting the SQLite store to the Pebble log", "dir", dir)
	tmp := filepath.Join(dir, convertingDir)
	if err := fs.RemoveAll(tmp); err != nil { // a conversion that crashed
		return fmt.Errorf("convert: %w", err)
	}
	n, err := convertInto(ctx, db, tmp, region, opts)
	if err != nil {
		return fmt.Errorf("convert %s: %w", db, err)
	}
	if err := syncDir(fs, tmp); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	if err := step("synced"); err != nil {
		return err
	}
	if err := fs.Rename(tmp, filepath.Join(dir, LogDir)); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	if err := syncDir(fs, dir); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	if err := step("renamed"); err != nil {
		return err
	}
	opts.Logger.Info("converted the SQLite store to the Pebble log", "dir", dir, "queues", n.queues,
		"messages", n.messages, "dead_rows_dropped", n.dead, "took", time.Since(start).Round(time.Millisecond).String())
	return removeSQLite(dir, opts)
}

// converted counts what a conversion wrote, and the dead rows it skipped.
type converted struct{ queues, messages, dead int }

// convertInto writes into the new log at tmp everything the database at
// path holds, and closes both.
func convertInto(ctx context.Context, path, tmp, region string, opts Options) (n converted, err error) {
	r, err := sqliteread.Open(ctx, path, region)
	if err != nil {
		return n, err
	}
	defer r.Close()
	if err := step("read"); err != nil {
		return n, err
	}
	db, err := openLog(tmp, Options{Logger: opts.Logger, FS: opts.FS})
	if err != nil {
		return n, err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	w := &convertWriter{db: db, b: db.NewBatch()}
	defer w.b.Close()
	purged, err := w.queues(ctx, r)
	if err != nil {
		return n, err
	}
	n.queues = len(purged)
	err = r.Messages(ctx, func(m *sqliteread.Message) error {
		through, ok := purged[m.QueueID]
		if !ok || m.Pos <= through {
			n.dead++ // of a deleted queue, or purged
			return nil
		}
		n.messages++
		return w.message(m)
	})
	if err != nil {
		return n, err
	}
	if err := w.commit(); err != nil {
		return n, err
	}
	// Tables are synced as they are written; the log's own files then
	// hold nothing that is not in them.
	if err := db.Flush(); err != nil {
		return n, err
	}
	return n, step("written")
}

// convertWriter writes a conversion's records in batches.
type convertWriter struct {
	db  *pebble.DB
	b   *pebble.Batch
	val []byte
}

// queues writes the queues, their sequence counters and deduplication
// keys, the deleted queues' names and the move tasks, and returns, per
// queue, the pos through which its messages are purged.
func (w *convertWriter) queues(ctx context.Context, r *sqliteread.Reader) (map[uint64]int64, error) {
	qs, err := r.Queues(ctx)
	if err != nil {
		return nil, err
	}
	purged := make(map[uint64]int64, len(qs))
	for i := range qs {
		q := &qs[i]
		put, err := newQueuePut(&q.Queue)
		if err != nil {
			return nil, err
		}
		if err := w.set(queueKey(kindQueue, q.ID), put.rec); err != nil {
			return nil, err
		}
		if q.LastSeq != "" {
			if err := w.set(queueKey(kindSeq, q.ID), []byte(q.LastSeq)); err != nil {
				return nil, err
			}
		}
		purged[q.ID] = q.PurgedPos
	}
	dedup, err := r.Dedup(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range dedup {
		if _, ok := purged[d.QueueID]; !ok {
			continue
		}
		if err := w.set(dedupKey(d.QueueID, d.At, d.Key), encodeDedup(d.MessageID, d.SeqNumber)); err != nil {
			return nil, err
		}
	}
	tombs, err := r.Tombstones(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tombs {
		if err := w.set(tombstoneKey(t.Region, t.Account, t.Name), encodeNanos(t.At)); err != nil {
			return nil, err
		}
	}
	tasks, err := r.MoveTasks(ctx)
	if err != nil {
		return nil, err
	}
	for i := range tasks {
		rec, err := encodeTask(&tasks[i])
		if err != nil {
			return nil, err
		}
		if err := w.set(taskKey(tasks[i].Handle), rec); err != nil {
			return nil, err
		}
	}
	return purged, nil
}

// message writes a live message's records.
func (w *convertWriter) message(m *sqliteread.Message) error {
	var check baton.Message
	if err := decodeState(m.State, &check, nil); err != nil {
		return fmt.Errorf("message %s: %w", m.ID, err)
	}
	if _, err := decodeAttributes(m.Attributes); err != nil {
		return fmt.Errorf("message %s: %w", m.ID, err)
	}
	if err := w.set(queueKey(kindState, m.QueueID, uint64(m.Pos)), recordOf(m.ID, m.State)); err != nil {
		return err
	}
	pay := payload{body: m.Body, bodyMD5: m.BodyMD5, attrs: m.Attributes, trace: m.Trace}
	w.val = appendPayload(w.val[:0], &pay)
	return w.set(queueKey(kindPayload, m.QueueID, uint64(m.Pos)), w.val)
}

// set adds a record to the batch, and commits the batch once it is big.
func (w *convertWriter) set(k, v []byte) error {
	if err := w.b.Set(k, v, nil); err != nil {
		return err
	}
	if w.b.Len() < convertBatchBytes {
		return nil
	}
	return w.commit()
}

func (w *convertWriter) commit() error {
	if err := w.b.Commit(pebble.NoSync); err != nil {
		return err
	}
	w.b.Reset()
	return step("batch")
}

// removeSQLite removes the files of a converted SQLite store, if any are
// left: the database last, so that its -wal and -shm never outlive it.
func removeSQLite(dir string, opts Options) error {
	removed := 0
	for _, name := range sqliteread.Files {
		err := opts.FS.Remove(filepath.Join(dir, name))
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("remove the converted SQLite store: %w", err)
		}
		removed++
		if err := step("removed " + name); err != nil {
			return err
		}
	}
	if removed == 0 {
		return nil
	}
	opts.Logger.Info("removed the converted SQLite store", "dir", dir, "files", removed)
	return syncDir(opts.FS, dir)
}

// syncDir fsyncs a directory, so that what was created, renamed or
// removed in it survives a power loss.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
