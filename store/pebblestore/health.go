package pebblestore

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
)

// What the store does when its disk fails it (a full disk, too few file
// descriptors, a stalled device):
//
//   - While the file system holding the log has less than diskHeadroom
//     free, calls that would change something are refused with
//     baton.ErrUnavailable (503 ServiceUnavailable): Pebble stops the
//     process when it cannot write its write-ahead log, and a flush needs
//     room for the table it writes before the log it replaces goes.
//   - A call waits for its commit at most Options.WriteTimeout, then fails
//     with baton.ErrUnavailable (503 ServiceUnavailable); its change stays
//     queued and is written once the disk takes writes again, as with any
//     failed commit (see Store). Once the writer has been stuck or failing
//     that long, calls that would change something are refused at once,
//     before they change anything, so memory does not fill with changes
//     that cannot be written; calls that only read answer from memory.
//   - Pebble retries a failed flush or compaction at once and without end
//     (it cannot go on without it): the file system under it (diskFS) makes
//     each failed background write wait before it returns, longer each
//     time up to backoffMax, and health logs the first failure, then one
//     line every summaryEvery with the count, and one when they succeed
//     again.
//   - When the next write-ahead log file cannot be opened for want of file
//     descriptors or space, Pebble would stop the process: diskFS tries
//     again with pauses up to backoffMax, and the commit waits (and fails
//     after Options.WriteTimeout, as above); health logs when the wait
//     begins and ends.
//   - A write, sync or close of the write-ahead log or MANIFEST that fails,
//     a creation of one or of the marker naming the current MANIFEST, or a
//     sync of the log's directory, never returns,
//     and every change after it is refused until the server is restarted
//     (walwatch.go): Pebble cannot go on from it. A start that meets one
//     fails with it.
//   - A table found failing its checksum (a read met it) is named by
//     Ping until the server is restarted on a salvaged copy, and each
//     compaction that fails on it holds its place backoffMax before the
//     next starts (pacer), as Pebble tries it again at once.
//   - A table whose read the disk fails (an I/O error: a bad sector) is
//     logged once and named by Ping, with the error, while reads of it
//     fail: the call that read it fails (503), each compaction that fails
//     on it holds its place as above, and once none has failed for
//     staleAfter the store reads again the bytes whose reads failed
//     (probeReads), ending the failure when that works or the table is
//     gone.
//   - A file Pebble no longer needs that the disk fails to remove is
//     logged (the first of a run), named by Ping while it stays, and
//     removed again once none has failed for staleAfter (removals.go).
//   - A disk operation that takes longer than Options.DiskSlowThreshold is
//     logged while it lasts (Pebble's disk-health checks) and when it ends.
//   - Ping, which /healthz calls, names every problem while it lasts.
const (
	// DefaultWriteTimeout is Options.WriteTimeout's default, the bound of
	// the PostgreSQL store's retries (pgstore.DefaultRetryFor) too.
	DefaultWriteTimeout = 5 * time.Second
	// DefaultDiskSlowThreshold is Options.DiskSlowThreshold's default,
	// Pebble's own.
	DefaultDiskSlowThreshold = 5 * time.Second
	// summaryEvery is how often a run of failing background writes is
	// logged again.
	summaryEvery = time.Minute
	// backoffMin and backoffMax bound the wait after a failed background
	// write: backoffMin after the first, doubling with each one after.
	backoffMin = 10 * time.Millisecond
	backoffMax = time.Second
	// staleAfter is how long after the last failed background write,
	// with none since, the store tests the disk itself (probeIfStale):
	// well above backoffMax, the pause between Pebble's own retries.
	staleAfter = 10 * backoffMax
	// probeFile is the file probeIfStale writes beside the log.
	probeFile = "baton-disk-probe"
	// slowFresh is how long after Pebble last reported an operation still
	// running slow that Ping still reports it: Pebble looks every 2 s.
	slowFresh = 5 * time.Second
	// diskHeadroom is the free space below which the store refuses
	// changes: room for the write-ahead logs of every memtable Pebble may
	// fill, and for the tables their flushes write.
	diskHeadroom = 2 * logMemTableSize * logMemTables
	// spaceEvery is how often the free space is looked at, at most.
	spaceEvery = 100 * time.Millisecond
)

// health is what the store knows of its disk's trouble: background writes
// failing, a disk operation running slow, Pebble holding writes back. It
// logs each problem when it begins and ends, and counts them for /metrics.
type health struct {
	log   *slog.Logger
	clock clock.Clock
	// slowAfter is Options.DiskSlowThreshold.
	slowAfter time.Duration

	mu sync.Mutex
	// failing is the current run of failed background writes: zero
	// since when none is failing.
	failing struct {
		since, lastLog, lastAt time.Time
		count, logged          int64
		last                   error
	}
	// slow is the slow operation Pebble reported last, and when.
	slow struct {
		info vfs.DiskSlowInfo
		seen time.Time
	}
	// logWait is the next write-ahead log file that cannot be opened
	// (diskFS.awaitLogFile), while commits wait for it.
	logWait struct {
		name  string
		since time.Time
		err   error
	}
	// stall is Pebble's hold on writes, while there is one.
	stall struct {
		reason string
		since  time.Time
	}
	// damaged are the files of the log found failing their checksums,
	// with the error of the first read that met each: what is damaged in them
	// cannot be read until the server is stopped and the directory
	// salvaged.
	damaged map[string]error
	// reads are the tables whose reads the disk failed (readFailed), by
	// file, while it does.
	reads map[string]*failingReads
	// removals are the files Pebble no longer needs that the disk failed
	// to remove, by path, while they stay (removals.go).
	removals map[string]failedRemoval

	// bgFailures counts failed background writes, slowOps the disk
	// operations that took longer than slowAfter.
	bgFailures atomic.Int64
	slowOps    atomic.Int64
	// damagedFailures counts the background writes that failed on a
	// damaged table; unreadCompactions the compactions that failed on a
	// table they could not read, damaged or on a disk failing its reads:
	// the pacer makes each hold its place a while.
	damagedFailures   atomic.Int64
	unreadCompactions atomic.Int64
	// damagedCompaction is the error of the last compaction that failed on
	// a damaged table (h.mu), damagedStats counts the failures on one that
	// were Pebble's loading of a table's statistics.
	damagedCompaction error
	damagedStats      atomic.Int64

	// fs and dir are where the log is, for its free space (spaceRefusal):
	// free is what it was when spaceChecked (Unix nanoseconds), spaceMu
	// serialises the looks, and short is set while it is below
	// diskHeadroom.
	fs           vfs.FS
	dir          string
	spaceMu      sync.Mutex
	spaceChecked atomic.Int64
	free         atomic.Int64
	short        atomic.Bool

	// wal watches the write-ahead log file in its place (walwatch.go).
	wal walWatch
}

func newHealth(log *slog.Logger, slowAfter time.Duration) *health {
	h := &health{log: log, clock: clock.System{}, slowAfter: slowAfter}
	h.wal.log = log
	h.wal.stuck = make(chan struct{})
	h.free.Store(-1)
	return h
}

// listener is the part of Pebble's event listener that tells h.
func (h *health) listener() pebble.EventListener {
	l := pebble.EventListener{
		BackgroundError: h.backgroundFailed,
		FlushEnd: func(info pebble.FlushInfo) {
			if info.Err == nil {
				h.backgroundSucceeded()
			}
		},
		CompactionEnd: func(info pebble.CompactionInfo) {
			switch {
			case info.Err == nil:
				h.backgroundSucceeded()
			case pebble.IsCorruptionError(info.Err) || readFault(info.Err):
				h.unreadCompactions.Add(1)
				if pebble.IsCorruptionError(info.Err) {
					h.compactionDamaged(info.Err)
				}
			}
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			h.mu.Lock()
			h.stall.reason, h.stall.since = info.Reason, h.clock.Now()
			h.mu.Unlock()
		},
		WriteStallEnd: func() {
			h.mu.Lock()
			h.stall.reason = ""
			h.mu.Unlock()
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) { h.corrupted(info.Path, info.Details) },
		LowDiskSpace: func(info pebble.LowDiskSpaceInfo) {
			h.log.Warn("pebblestore: the disk is filling up", "free_bytes", info.AvailBytes, "total_bytes", info.TotalBytes,
				"below_percent", info.PercentThreshold)
		},
	}
	h.removalListener(&l)
	return l
}

// compactionDamaged is told of a compaction that failed on a damaged
// table, err, before Pebble reports err again (backgroundFailed): it logs
// the first. Pebble's loading of a table's statistics meets the damage
// too, and reports it only as a background error.
func (h *health) compactionDamaged(err error) {
	h.mu.Lock()
	first := h.damagedCompaction == nil
	h.damagedCompaction = err
	h.mu.Unlock()
	if first {
		h.log.Error("pebblestore: a compaction failed on a damaged table; compactions that read it fail until the server runs on a salvaged copy, "+
			"and are tried again at most about once a second", "err", firstLine(err))
	}
}

// backgroundFailed is told of each failed flush or compaction (Pebble
// tries again) and of each failure of the store's own background work.
// Pebble calls it holding its lock: it only counts and, now and then, logs.
//
// A compaction that failed on a table it could not read (readFault) is no
// failing write either: the table is named by Ping from the read
// (readFailed), and it is counted only.
//
// A compaction that failed on a damaged table is no failing disk: the
// table is named by Ping from the read that found it (corrupted), and
// compactions reading it fail until the server runs on a salvaged copy,
// while the disk's flushes and other compactions work. So it is counted,
// and logged the first time (a compaction's by compactionDamaged, at its
// end; Pebble's loading of a table's statistics here), but it neither
// begins nor goes on with a run of failing writes, whose next success
// would say, falsely, that it ended.
func (h *health) backgroundFailed(err error) {
	if errors.Is(err, pebble.ErrCancelledCompaction) {
		return
	}
	h.bgFailures.Add(1)
	if pebble.IsCorruptionError(err) {
		h.damagedFailures.Add(1)
		h.mu.Lock()
		last := h.damagedCompaction
		h.mu.Unlock()
		if last != nil && errors.Is(err, last) {
			return // the compaction's, logged at its end
		}
		if h.damagedStats.Add(1) == 1 {
			h.log.Error("pebblestore: Pebble's loading of a table's statistics failed on a damaged table; it is tried again after each flush or compaction "+
				"until the server runs on a salvaged copy", "err", firstLine(err))
		}
		return
	}
	if readFault(err) {
		// The disk failed a read of a table the work needed, not a
		// write: the table's failing reads are logged and named apart
		// (readFailed), and a flush that works says nothing of them.
		return
	}
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	f := &h.failing
	f.count++
	f.last, f.lastAt = err, now
	switch {
	case f.since.IsZero():
		f.since, f.lastLog, f.logged = now, now, f.count
		h.log.Error("pebblestore: a background write failed; it is tried again, with growing pauses, and logged again every minute until it works",
			"problem", h.problemOf(err), "err", err.Error())
	case now.Sub(f.lastLog) >= summaryEvery:
		h.log.Error("pebblestore: background writes still failing", "problem", h.problemOf(err),
			"failures", f.count-f.logged, "failures_in_all", f.count, "for", now.Sub(f.since).Round(time.Second), "err", err.Error())
		f.lastLog, f.logged = now, f.count
	}
}

// backgroundSucceeded is told of each flush or compaction that worked.
func (h *health) backgroundSucceeded() { h.endFailing("pebblestore: background writes work again") }

// endFailing ends the run of failed background writes, if there is one,
// with a line saying why.
func (h *health) endFailing(msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := &h.failing
	if f.since.IsZero() {
		return
	}
	h.log.Warn(msg, "failures", f.count, "after", h.clock.Now().Sub(f.since).Round(time.Millisecond))
	f.since, f.count, f.last = time.Time{}, 0, nil
}

// probeIfStale writes, syncs and removes a small file beside the log when
// background writes have failed but none for staleAfter. Pebble does not
// retry everything that fails (a compaction it sets aside for a while, the
// store's idle compaction), so a run of failures can outlive its cause:
// Ping would name a failure that is no longer happening, and /healthz fail
// for as long as nothing is written. The probe's outcome is the present
// truth: it fails the run on, or ends it.
func (h *health) probeIfStale() {
	h.mu.Lock()
	stale := !h.failing.since.IsZero() && h.clock.Now().Sub(h.failing.lastAt) >= staleAfter
	h.mu.Unlock()
	if !stale || h.fs == nil {
		return
	}
	if err := h.probe(); err != nil {
		h.backgroundFailed(fmt.Errorf("a test write beside the log: %w", err))
		return
	}
	h.endFailing("pebblestore: the disk takes writes again: no background write has failed for a while, and a test write worked")
}

// probe writes, syncs and removes probeFile in the log's directory.
func (h *health) probe() error {
	name := h.fs.PathJoin(h.dir, probeFile)
	f, err := h.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, 4<<10))
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close(), h.fs.Remove(name))
}

// corrupted is told of a read of file that failed its checksum, err (the
// read's caller is told too, and log.go's corruptionListener logs it).
func (h *health) corrupted(file string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.damaged == nil {
		h.damaged = make(map[string]error)
	}
	if _, ok := h.damaged[file]; !ok {
		h.damaged[file] = err
	}
}

// anyUnreadable reports whether a file of the log was found failing its
// checksum, or the disk is failing reads of one.
func (h *health) anyUnreadable() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.damaged) > 0 || len(h.reads) > 0
}

// logFileWaiting is told that the next write-ahead log file cannot be
// opened now, and commits wait until it can.
func (h *health) logFileWaiting(name string, err error) {
	h.mu.Lock()
	h.logWait.name, h.logWait.since, h.logWait.err = name, h.clock.Now(), err
	h.mu.Unlock()
	h.log.Error("pebblestore: the next write-ahead log file cannot be opened; commits wait, and it is tried again with growing pauses",
		"problem", diskProblem(err), "file", name, "err", err.Error())
}

// logFileDone is told that the file logFileWaiting waited for is open,
// or that opening it failed for another reason, err.
func (h *health) logFileDone(err error) {
	h.mu.Lock()
	w := h.logWait
	h.logWait.name = ""
	h.mu.Unlock()
	after := h.clock.Now().Sub(w.since).Round(time.Millisecond)
	if err != nil {
		h.log.Error("pebblestore: the next write-ahead log file cannot be opened", "file", w.name, "after", after, "err", err.Error())
		return
	}
	h.log.Warn("pebblestore: the next write-ahead log file is open; commits go on", "file", w.name, "after", after)
}

// backoff is how long a background write that just failed waits before it
// returns its error: backoffMin, doubled for each failure since the last
// success, up to backoffMax.
func (h *health) backoff() time.Duration {
	h.mu.Lock()
	n := h.failing.count
	h.mu.Unlock()
	return min(backoffMin<<min(n, 10), backoffMax)
}

// failingFor is how long background writes have been failing without a
// success, and the last error; zero if they are not.
func (h *health) failingFor() (time.Duration, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failing.since.IsZero() {
		return 0, nil
	}
	return h.clock.Now().Sub(h.failing.since), h.failing.last
}

// slowOngoing is Pebble's report of a disk operation still running past
// slowAfter: it is logged when it is the first of its operation. A failed
// write of the log, which the store holds for good (logFailed), is no
// slow disk: it is neither logged nor counted so.
func (h *health) slowOngoing(info vfs.DiskSlowInfo) {
	if h.wal.failedWrite(info.Path) {
		return
	}
	now := h.clock.Now()
	h.mu.Lock()
	prev := h.slow
	h.slow.info, h.slow.seen = info, now
	h.mu.Unlock()
	if prev.seen.IsZero() || prev.info.Path != info.Path || prev.info.OpType != info.OpType || prev.info.Duration > info.Duration {
		h.slowOps.Add(1)
		h.log.Warn("pebblestore: a disk operation is slow, still waiting", "op", info.OpType.String(), "file", info.Path,
			"waited", info.Duration.Round(time.Millisecond))
	}
}

// slowDone is told of a disk operation that took longer than slowAfter,
// when it ends.
func (h *health) slowDone(op vfs.OpType, path string, took time.Duration, err error) {
	h.mu.Lock()
	reported := h.slow.info.Path == path && h.slow.info.OpType == op && !h.slow.seen.IsZero()
	if reported {
		h.slow.seen = time.Time{}
	}
	h.mu.Unlock()
	if !reported {
		h.slowOps.Add(1) // ended before Pebble looked
	}
	attrs := []any{"op", op.String(), "file", path, "took", took.Round(time.Millisecond)}
	if err != nil {
		attrs = append(attrs, "err", err.Error())
	}
	h.log.Warn("pebblestore: a slow disk operation ended", attrs...)
}

// problems names what is wrong with the disk now, for Ping; stuckFor is
// how long Pebble has held writes back beyond which it counts.
func (h *health) problems(stuckFor time.Duration) []string {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	if h.short.Load() {
		out = append(out, fmt.Sprintf("disk full: %d bytes free on the file system of %s, less than the %d the store keeps free for its log",
			h.free.Load(), h.dir, diskHeadroom))
	}
	if f := h.failing; !f.since.IsZero() {
		out = append(out, fmt.Sprintf("%s: background writes failing for %v (%d failures), the last: %v",
			h.problemOf(f.last), now.Sub(f.since).Round(time.Second), f.count, f.last))
	}
	if w := h.logWait; w.name != "" {
		out = append(out, fmt.Sprintf("%s: the next write-ahead log file cannot be opened for %v, commits wait: %v",
			h.problemOf(w.err), now.Sub(w.since).Round(time.Second), w.err))
	}
	if s := h.slow; !s.seen.IsZero() && now.Sub(s.seen) < slowFresh && !h.wal.failedWrite(s.info.Path) {
		out = append(out, fmt.Sprintf("disk slow: %s on %s has been running for %v", s.info.OpType, s.info.Path,
			(s.info.Duration+now.Sub(s.seen)).Round(time.Second)))
	}
	for _, file := range slices.Sorted(maps.Keys(h.damaged)) {
		out = append(out, fmt.Sprintf("log damaged: a read of %s failed its checksum (%s): some of what it holds cannot be read. "+
			"Stop the server and run `baton store check`", file, firstLine(h.damaged[file])))
	}
	for _, file := range slices.Sorted(maps.Keys(h.reads)) {
		r := h.reads[file]
		out = append(out, fmt.Sprintf("%s: reads of %s failing for %v (%d failures), the last: %v: what it holds cannot be read",
			diskProblem(r.err), file, now.Sub(r.since).Round(time.Second), r.count, r.err))
	}
	if p := h.removalProblem(); p != "" {
		out = append(out, p)
	}
	if st := h.stall; st.reason != "" && now.Sub(st.since) >= stuckFor {
		out = append(out, fmt.Sprintf("writes held back for %v: %s", now.Sub(st.since).Round(time.Second), st.reason))
	}
	return out
}

// diskProblem names the kind of failure err is, for the operator.
func diskProblem(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "disk full"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "out of file descriptors"
	case errors.Is(err, syscall.EROFS):
		return "file system read-only"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "permission denied (the data directory's owner, mode or attributes changed?)"
	case errors.Is(err, syscall.EIO):
		return "disk I/O error"
	case errors.Is(err, syscall.EFBIG):
		return "file too large: the process's file size limit (ulimit -f, LimitFSIZE=) is reached"
	case pebble.IsCorruptionError(err):
		// A compaction that reads a damaged table fails each time it is
		// tried: the disk is not full, the log is damaged.
		return "log damaged (run `baton store check`)"
	}
	return "disk write failed"
}

// problemOf is diskProblem(err), adding to a full disk whose file system
// had bytes to spare at the last look (spaceRefusal) that it is likely
// out of inodes, which the free bytes do not show.
func (h *health) problemOf(err error) string {
	p := diskProblem(err)
	if free := h.free.Load(); errors.Is(err, syscall.ENOSPC) && free >= diskHeadroom {
		p += fmt.Sprintf(" (yet %d bytes are free: the file system is likely out of inodes, see `df -i`)", free)
	}
	return p
}

// exhausted reports whether err is the disk or the process running out of
// something (space, file descriptors) that may come back.
func exhausted(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// unavailable is err as a baton.ErrUnavailable if the resource it lacked
// may come back, else err itself.
func unavailable(err error) error {
	if err == nil || !exhausted(err) || errors.Is(err, baton.ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", baton.ErrUnavailable, diskProblem(err), err)
}

// joinProblems is problems as one line.
func joinProblems(problems []string) string { return strings.Join(problems, "; ") }

// spaceRefusal returns an error wrapping baton.ErrUnavailable while the
// file system of the log has less than diskHeadroom free, else nil. It
// looks at most every spaceEvery; a file system that cannot tell (an
// in-memory one) never refuses.
func (h *health) spaceRefusal() error {
	now := h.clock.Now().UnixNano()
	if h.fs != nil && time.Duration(now-h.spaceChecked.Load()) >= spaceEvery && h.spaceMu.TryLock() {
		h.checkSpace(now)
		h.spaceMu.Unlock()
	}
	if !h.short.Load() {
		return nil
	}
	return fmt.Errorf("%w: pebblestore: disk full: %d bytes free on the file system of %s, less than the %d the store keeps free for its log",
		baton.ErrUnavailable, h.free.Load(), h.dir, diskHeadroom)
}

// checkSpace looks at the free space, and logs when it falls below
// diskHeadroom or rises above it again.
func (h *health) checkSpace(now int64) {
	h.spaceChecked.Store(now)
	u, err := h.fs.GetDiskUsage(h.dir)
	if err != nil {
		return // unknown: as before
	}
	h.free.Store(int64(u.AvailBytes))
	short := u.AvailBytes < diskHeadroom
	if short == h.short.Swap(short) {
		return
	}
	if short {
		h.log.Error("pebblestore: disk full: refusing calls that change something until there is room again",
			"free_bytes", u.AvailBytes, "keeps_free", diskHeadroom, "dir", h.dir)
	} else {
		h.log.Warn("pebblestore: the disk has room again: taking changes", "free_bytes", u.AvailBytes, "dir", h.dir)
	}
}
