package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Deleted messages give their space back only once their deletions reach
// the tables and a compaction meets them with what they delete. Under load
// memtables fill, are flushed, and compactions follow within seconds. But a
// backlog drained with nothing sent after it leaves its last deletions in a
// memtable that nothing fills, and the deletions that did reach the tables
// are too few for Pebble to compact them into the bodies below them: the
// drained bodies would stay on disk for as long as the server is idle.
// So once the writer has been idle for idleAfter the store flushes the
// memtable, and compacts the whole log when it has deleted since its last
// compaction at least as many messages as it holds (and idleCompactMin):
// the compaction then rewrites at most twice what was deleted.
const (
	idleAfter       = 5 * time.Second
	idleCompactMin  = 10000
	idleCompactTime = 10 * time.Minute
	// idleCompactLook is how often an idle compaction looks whether a
	// background write failed (compactIdle).
	idleCompactLook = 100 * time.Millisecond
)

// flushWhenIdle flushes or compacts the log once the writer has been idle
// for idleAfter after committing something, until ctx ends; and tests the
// disk when a run of failed background writes has gone stale
// (health.probeIfStale), reads again the tables whose reads failed
// (probeReads), removes again the files whose removal failed
// (retryRemovals), and looks whether the log's files are still in place
// (filesWatch), so that Ping names one removed while nothing is sent.
func (s *Store) flushWhenIdle(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(idleAfter)
	defer t.Stop()
	// seen is the commit count at the last tick, flushed the count at the
	// last flush, compacted the messages removed at the last compaction.
	seen := s.w.commits.Load()
	flushed, compacted := seen, s.w.removed.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.health.probeIfStale()
		s.health.probeReads()
		s.health.retryRemovals()
		s.health.wal.checkFiles(true)
		n := s.w.commits.Load()
		if n != seen || n == flushed {
			seen = n
			continue
		}
		if s.diskTrouble() {
			// Pebble is retrying a flush or the writer is stuck: an idle
			// flush or compaction would only wait behind it, or fail too.
			continue
		}
		flushed = n
		removed := s.w.removed.Load()
		if dead := removed - compacted; dead >= max(int64(s.index.Messages()), idleCompactMin) && !s.health.anyUnreadable() {
			s.compactIdle(ctx)
			compacted = removed
			continue
		}
		// The flush runs in the background; Pebble tries a failed one
		// again, and health hears of each failure.
		if _, err := s.db.AsyncFlush(); err != nil {
			s.health.backgroundFailed(fmt.Errorf("flush the idle memtable: %w", err))
		}
	}
}

// diskTrouble reports whether background writes are failing or the writer
// cannot commit.
func (s *Store) diskTrouble() bool {
	d, _ := s.health.failingFor()
	return d > 0 || s.w.refusal() != nil
}

// compactIdle compacts the whole log, for at most idleCompactTime, and
// gives up as soon as a background write fails meanwhile: a damaged
// table fails each try of a compaction that reads it, and Pebble, trying
// again, held the idle compaction waiting until idleCompactTime. (A log
// known to be damaged is not compacted when idle: the compaction cannot
// end, and the log is to be salvaged.) A compaction that fails Pebble
// reports itself (BackgroundError), the idle one's as any other's, and a
// failed write of the write-ahead log the store's walWatch does: what is
// the idle compaction's own to say is only that it gave up for time,
// which is no failure (nothing failed, and Pebble finishes the compaction
// it began): it is logged, not counted.
func (s *Store) compactIdle(ctx context.Context) { s.compactIdleWithin(ctx, idleCompactTime) }

// compactIdleWithin is compactIdle, giving up after limit.
func (s *Store) compactIdleWithin(ctx context.Context, limit time.Duration) {
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	failures := s.health.bgFailures.Load()
	gaveWay := make(chan struct{})
	go func() {
		t := time.NewTicker(idleCompactLook)
		defer t.Stop()
		for {
			select {
			case <-cctx.Done():
				return
			case <-t.C:
				if s.health.bgFailures.Load() != failures {
					close(gaveWay)
					cancel()
					return
				}
			}
		}
	}()
	err := s.db.Compact(cctx, []byte{0}, []byte{0xff}, false)
	select {
	case <-gaveWay:
		return
	default:
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		s.health.log.Warn("pebblestore: the idle compaction did not end within its time; Pebble finishes the compaction it began, "+
			"and compacts the rest of the log in its own time", "limit", limit)
	}
}
