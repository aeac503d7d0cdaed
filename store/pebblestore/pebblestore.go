package pebblestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
)

// Files of a data directory.
const (
	// LogDir is the directory of the log, Pebble's files.
	LogDir = "pebble"
	// LockFile is held locked by the process that has the directory open.
	LockFile = "lock"
)

// ErrLocked is returned by Open when another process has the data directory
// open.
var ErrLocked = errors.New("the data directory is in use by another baton process")

// Durability says when a commit counts as done.
type Durability int

const (
	// DurabilityFull fsyncs the log before a commit counts as done: an
	// acknowledged change survives a process crash and a power loss.
	DurabilityFull Durability = iota
	// DurabilityRelaxed counts a commit done once the log's bytes are
	// written to the operating system, which writes them to the disk in
	// its own time (and the store fsyncs what it compacts): an
	// acknowledged change survives a crash or kill of the process, but the
	// last commits before a power loss or kernel crash may be lost, and a
	// log whose last pages reached the disk out of order may not open
	// (TestPowerLoss with BATON_POWERLOSS_DURABILITY=relaxed shows both).
	DurabilityRelaxed
)

// ParseDurability reads "full" or "relaxed".
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "full", "":
		return DurabilityFull, nil
	case "relaxed":
		return DurabilityRelaxed, nil
	}
	return 0, fmt.Errorf("unknown durability %q: want full or relaxed", s)
}

// String returns "full" or "relaxed".
func (d Durability) String() string {
	if d == DurabilityRelaxed {
		return "relaxed"
	}
	return "full"
}

// Options configure Open.
type Options struct {
	// Durability defaults to DurabilityFull.
	Durability Durability
	// DefaultRegion is the region a data directory written before queues
	// had one gives its queues when Open converts it (default us-east-1):
	// the region the server served them in, its --region.
	DefaultRegion string
	// Logger is told of a conversion and of the log's errors (default:
	// slog.Default()).
	Logger *slog.Logger
	// FS is the file system the data directory is on (default: the
	// operating system's, vfs.Default). Tests give one that keeps only
	// what was synced, to cut the power. On another file system than the
	// default the directory lock is the file system's own, and an SQLite
	// store is looked for, and removed once converted, through FS but read
	// from the operating system's path.
	FS vfs.FS

	// readOnly opens the log read-only, to check it and build the index
	// before anything is written to it (openChecked).
	readOnly bool
	// manifestSize, if set, is the size past which Pebble starts a new
	// MANIFEST (tests: its default is 128 MiB).
	manifestSize int64
	// pebbleScheduler leaves compactions to Pebble's own scheduler instead
	// of the pacer (tests: to compare the two).
	pebbleScheduler bool
	// WriteTimeout bounds how long a call waits for its commit before it
	// fails with baton.ErrUnavailable (default DefaultWriteTimeout); see
	// health.go for what the store does while its disk fails it.
	WriteTimeout time.Duration
	// DiskSlowThreshold is how long a disk operation may take before it
	// counts as slow and is logged (default DefaultDiskSlowThreshold).
	DiskSlowThreshold time.Duration
}

// stripes is how many locks order the changes of queues: a queue's changes
// are made and queued under its stripe's lock.
const stripes = 64

// Store is the embedded durable baton.Store. It is safe for concurrent use.
//
// A call that changes something returns once the change is committed, and
// one that changed nothing once every change it may have seen is: no answer
// rests on state a crash could take back. The exception is MessageStats,
// the counts, which answers from memory at once: it counts the changes
// still queued with the rest, a commit's worth in normal running, and
// while the disk takes no commit, those of the calls answered 503 for it
// (which a failed write of the log never writes: a restart has none of
// them). A failed commit fails the calls
// waiting for it with an error; their changes stay applied in memory and
// are written with the next commit, so a call that failed may still take
// effect, as may any SQS call that errs. A call waits for its commit at
// most Options.WriteTimeout, then fails with baton.ErrUnavailable, and
// while the disk takes no commit calls that would change something are
// refused before they do (health.go). (An error writing Pebble's own
// write-ahead log leaves its commit waiting for good, and every change
// after it refused, until a restart recovers the log's prefix: see
// walwatch.go.)
//
// Lock order: qmu, then stripe locks (lower index first), then the index's
// own locks, then the writer's and pendMu.
type Store struct {
	dir   string
	fs    vfs.FS
	index *memstore.Store
	db    *pebble.DB
	w     *writer
	lock  io.Closer

	// qmu orders the queue-level calls (create, update, delete, purge).
	qmu sync.Mutex
	// queueWrites counts, by queue name, the queue-level changes made in
	// memory and not committed yet (queueWrite): a read of a queue that
	// has any waits for the latest commit, so that no caller is answered
	// from a queue whose creation, say, a crash would undo. It is raised
	// under qmu before the index changes.
	queueWrites pendingQueues

	stripes [stripes]sync.Mutex
	// dropped collects, per stripe, the messages the index dropped as past
	// retention during the call holding the stripe's lock.
	dropped [stripes][]droppedMsg
	// pos numbers messages in the order they joined their queue. A
	// message's pos, which with its queue's id keys its records, is its key
	// in the index (memstore's SetKey).
	pos atomic.Int64

	// pending holds, by pos, the payloads not committed yet: those of
	// queued inserts, and those of queued moves, whose payload keeps its
	// old key until the move commits. A receive may take such a message
	// before the commit.
	pendMu  sync.Mutex
	pending map[int64]payload
	// unreadable holds, by pos, the messages whose payload a read failed
	// to give, once logged.
	unreadable sync.Map

	// idleStop and idleDone stop flushWhenIdle.
	idleStop context.CancelFunc
	idleDone chan struct{}
	logger   *slog.Logger
	// gen is the log's generation (mark.go); durability the log's.
	gen        uint64
	durability Durability

	// health is what the store knows of its disk's trouble (health.go);
	// diskChecks are Pebble's disk-health checks, closed after the log.
	health     *health
	diskChecks io.Closer

	// backups are the backups running (backup.go), which Close waits for.
	backups backupSet

	closeOnce sync.Once
	closeErr  error
}

var (
	_ baton.Store  = (*Store)(nil)
	_ baton.Pinger = (*Store)(nil)
)

// Open opens the store in dir, creating the directory and the log if
// needed, converts an SQLite store found there (see convert.go) and
// rebuilds the in-memory index. It returns an error wrapping ErrLocked if
// another process has dir open.
func Open(ctx context.Context, dir string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if err := makeDir(opts.FS, dir); err != nil {
		return nil, fmt.Errorf("pebblestore: data directory: %w", err)
	}
	lock, err := lock(opts.FS, filepath.Join(dir, LockFile))
	if err != nil {
		return nil, fmt.Errorf("pebblestore: %s: %w", dir, err)
	}
	s := &Store{dir: dir, fs: opts.FS, lock: lock, pending: make(map[int64]payload)}
	s.index = memstore.NewWithOptions(memstore.Options{ExpiredFunc: s.expired})
	if err := s.open(ctx, opts); err != nil {
		// A log whose write failed is left open: its failed write never
		// returns, and closing it would wait for it.
		if s.db != nil && s.health.wal.refusal() == nil {
			s.db.Close()
			if s.diskChecks != nil {
				s.diskChecks.Close()
			}
		}
		lock.Close()
		return nil, fmt.Errorf("pebblestore: %s: %w", dir, ioFailed(err))
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, opts Options) error {
	region := opts.DefaultRegion
	if region == "" {
		region = "us-east-1"
	}
	if !baton.ValidRegion(region) {
		return fmt.Errorf("%q is not a region name", region)
	}
	if err := convert(ctx, s.dir, region, opts); err != nil {
		return err
	}
	s.logger, s.durability = opts.Logger, opts.Durability
	s.health = newHealth(opts.Logger, cmp.Or(opts.DiskSlowThreshold, DefaultDiskSlowThreshold))
	tasks, err := s.openChecked(ctx, opts)
	if err != nil {
		return err
	}
	s.w = newWriter(s.db, tasks, s.committed, cmp.Or(opts.WriteTimeout, DefaultWriteTimeout))
	s.w.wal = &s.health.wal
	s.health.wal.files = &filesWatch{fs: s.health.fs, dir: s.health.dir, db: s.db}
	if opts.Durability == DurabilityRelaxed {
		s.health.wal.every = relaxedWALCheckEvery
	}
	s.w.start()
	s.health.spaceRefusal() // logs, if the disk is full already
	var idle context.Context
	idle, s.idleStop = context.WithCancel(context.Background())
	s.idleDone = make(chan struct{})
	go s.flushWhenIdle(idle, s.idleDone)
	return nil
}

// makeDir creates dir and any missing parents, and syncs the parent of
// each directory it created, so that a new data directory does not vanish
// in a power loss with everything written into it. (Pebble does the same
// for the log's directory in it.)
func makeDir(fs vfs.FS, dir string) error {
	var parents []string
	for d := filepath.Clean(dir); ; {
		if _, err := fs.Stat(d); err == nil {
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		parents, d = append(parents, parent), parent
	}
	if len(parents) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, p := range parents {
		if err := syncDir(fs, p); err != nil {
			return err
		}
	}
	return nil
}

// lock takes the data directory's lock, held until the closer is closed:
// the operating system's advisory lock on the default file system (see
// lockDir), the file system's own otherwise.
func lock(fs vfs.FS, path string) (io.Closer, error) {
	if fs == vfs.Default {
		return lockDir(path)
	}
	return fs.Lock(path)
}

// Close commits what is queued and closes the log. Calls after Close fail
// with ErrClosed. If the disk does not take the last commit, or Pebble does
// not close, within the write timeout, Close returns an error and leaves
// the log open: Pebble cannot close with a commit under way, and what it
// holds is safe in its write-ahead log. Backups are refused from its
// start; one still running after the write timeout keeps the log open
// until it ends (Close returns errCloseBackup), as its copy reads it.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		timeout := s.w.timeout
		if s.idleStop != nil {
			s.idleStop()
			select {
			case <-s.idleDone:
			case <-time.After(timeout): // waiting for the stuck commit
			}
		}
		backupsDone := s.backups.close()
		s.closeErr = s.w.stop(timeout)
		if errors.Is(s.closeErr, errStuck) {
			s.lock.Close()
			return
		}
		s.w.batch.Close()
		s.health.wal.files.stop()
		// With the write-ahead log removed, the directory in its place (if
		// any) is not this log's: no mark is written into it.
		gone := s.w.wal.refusal()
		// A backup still reads the log: Pebble is closed when it ends.
		openForBackup := !waitFor(backupsDone, timeout)
		if err := s.finish(timeout, s.closeErr == nil && gone == nil, !openForBackup); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
		if openForBackup && !s.backups.afterLast(s.closeAfterBackup) {
			openForBackup = false // it ended meanwhile
			if err := s.finish(timeout, false, true); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
		if s.closeErr == nil {
			s.closeErr = gone
		}
		if openForBackup && s.closeErr == nil {
			s.closeErr = errCloseBackup
		}
		if openForBackup || errors.Is(s.closeErr, errCloseStuck) {
			s.lock.Close()
			return
		}
		s.diskChecks.Close()
		if err := s.lock.Close(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}

// errCloseBackup is returned by Close when a backup still ran after the
// write timeout: Pebble, which it reads, is closed when it ends (closed
// under it, Pebble reported its copy's hold on the log as leaked
// iterators).
var errCloseBackup = errors.New("pebblestore: a backup was still running: the log is closed when it ends; every change acknowledged is in its write-ahead log")

// closeAfterBackup closes Pebble, and its disk-health checks, once the
// backups Close left it open for have ended.
func (s *Store) closeAfterBackup() {
	if err := s.db.Close(); err != nil {
		s.logger.Error("pebblestore: closing the log after the last backup", "err", err)
	}
	s.diskChecks.Close()
}

// waitFor reports whether done is closed within d.
func waitFor(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// errCloseStuck is returned by Close when Pebble did not close within the
// write timeout.
var errCloseStuck = errors.New("pebblestore: the disk did not answer while the log was closing: it is left open; every change acknowledged is in its write-ahead log")

// finish writes the closing mark (when mark is set: the writer stopped
// with everything written) and closes Pebble, giving up after timeout with
// errCloseStuck: Pebble may be waiting for the disk (the next write-ahead
// log file, a sync), and its calls return only once the disk answers.
func (s *Store) finish(timeout time.Duration, mark, closeLog bool) error {
	done := make(chan error, 1)
	go func() {
		var err error
		if mark {
			err = s.advanceMark(s.gen+1, true, s.durability)
		}
		if closeLog {
			err = errors.Join(err, s.db.Close())
		}
		done <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errCloseStuck
	}
}

// Stats are counters of the writer since Open.
type Stats struct {
	// Commits is how many batches were committed.
	Commits int64
	// Changes is how many changes they held: one per message sent,
	// received, deleted, moved or changed, one per queue-level call.
	Changes int64
	// Failures is how many commits failed (and were tried again).
	Failures int64
	// CommitTime is the time spent committing, failed commits included.
	CommitTime time.Duration
	// Unavailable is how many calls failed with baton.ErrUnavailable
	// because the disk did not take their commit in time, or were refused
	// while it did not.
	Unavailable int64
	// BackgroundFailures is how many background writes (Pebble's flushes
	// and compactions, the store's idle compaction) failed.
	BackgroundFailures int64
	// SlowDiskOps is how many disk operations took longer than
	// Options.DiskSlowThreshold.
	SlowDiskOps int64
	// DiskFree is the free space of the file system holding the log when
	// last looked at (-1 if unknown).
	DiskFree int64
}

// Stats returns the writer's counters.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.w.commits.Load(), Changes: s.w.changes.Load(), Failures: s.w.failures.Load(),
		CommitTime: time.Duration(s.w.commitNanos.Load()), Unavailable: s.w.timedOut.Load(),
		BackgroundFailures: s.health.bgFailures.Load(), SlowDiskOps: s.health.slowOps.Load(), DiskFree: s.health.free.Load()}
}

// Ping reports whether the store takes writes and its disk works: nil, or
// an error naming each problem (a full disk, failing background writes,
// a slow disk operation, writes held back or refused) for /healthz.
func (s *Store) Ping(context.Context) error {
	s.health.spaceRefusal()       // looks again, if it is time to
	s.health.wal.checkFiles(true) // the same
	var problems []string
	if err := s.w.refusal(); err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), baton.ErrUnavailable.Error()+": pebblestore: "))
	}
	problems = append(problems, s.health.problems(s.w.timeout)...)
	if p := s.health.wal.files.formatProblem(); p != "" {
		problems = append(problems, p)
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(joinProblems(problems))
}

// writable returns nil if the store takes changes now, or why not,
// wrapping baton.ErrUnavailable; a call that changes something asks before
// it changes anything.
func (s *Store) writable() error {
	err := s.w.refusal()
	if err == nil {
		err = s.health.spaceRefusal()
	}
	if err != nil {
		s.w.timedOut.Add(1)
	}
	return err
}
