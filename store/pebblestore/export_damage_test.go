package pebblestore

import (
	"context"
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// Flush flushes the log's memtables to a table.
func Flush(tb testing.TB, s *Store) {
	tb.Helper()
	if err := s.db.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// FormatKey and QueueKey are the keys of the log's format record and of a
// queue's record.
var FormatKey = formatKey

func QueueKey(id uint64) []byte { return queueKey(kindQueue, id) }

// DeleteKeys deletes keys from the log in dir (a data directory closed
// cleanly), as a damaged file would lose them, leaving the mark as it was.
func DeleteKeys(dir string, keys ...[]byte) error {
	db, err := pebble.Open(dir+"/"+LogDir, &pebble.Options{Logger: logger{slog.New(slog.DiscardHandler)}, FormatMajorVersion: pebble.FormatNewest})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := db.Delete(k, pebble.Sync); err != nil {
			db.Close()
			return err
		}
	}
	return db.Close()
}

// CompactInBackground compacts the whole log, as the idle compaction
// does, until stop is called (before the store is closed).
func CompactInBackground(s *Store) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.db.Compact(ctx, []byte{0}, []byte{0xff}, false)
	}()
	return func() { cancel(); <-done }
}

// FlushAsync flushes the log's memtable and waits for the flush.
func FlushAsync(s *Store) {
	if ch, err := s.db.AsyncFlush(); err == nil {
		<-ch
	}
}

// CompactIdle compacts the whole log as the idle compaction does, and
// returns when that does.
func CompactIdle(s *Store) { s.compactIdle(context.Background()) }

// ProbeReads reads again each table whose reads failed, as the store does
// once none has failed for a while.
func ProbeReads(s *Store) { s.health.probeReadsOlder(0) }

// RetryRemovals removes again the files of the log the disk failed to
// remove, as the store does once none has failed for a while.
func RetryRemovals(s *Store) { s.health.retryRemovalsOlder(0) }
