package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
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
}

// stripes is how many locks order the changes of queues: a queue's changes
// are made and queued under its stripe's lock.
const stripes = 64

// Store is the embedded durable baton.Store. It is safe for concurrent use.
//
// A call that changes something returns once the change is committed, and
// one that changed nothing once every change it may have seen is: no answer
// rests on state a crash could take back. A failed commit fails the calls
// waiting for it with an error; their changes stay applied in memory and
// are written with the next commit, so a call that failed may still take
// effect, as may any SQS call that errs. (An error writing Pebble's own
// write-ahead log, a full disk say, stops the process instead: the next
// start recovers the log's prefix.)
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
	// queueWrites counts the queue-level changes made in memory and not
	// committed yet (queueWrite): while there are any, reads of queues wait
	// for the latest commit, so that no caller is answered from a queue
	// whose creation, say, a crash would undo. It is raised under qmu
	// before the index changes.
	queueWrites atomic.Int64

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

	// idleStop and idleDone stop flushWhenIdle.
	idleStop context.CancelFunc
	idleDone chan struct{}
	logger   *slog.Logger
	// gen is the log's generation (mark.go); durability the log's.
	gen        uint64
	durability Durability

	closeOnce sync.Once
	closeErr  error
}

var _ baton.Store = (*Store)(nil)

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
		if s.db != nil {
			s.db.Close()
		}
		lock.Close()
		return nil, fmt.Errorf("pebblestore: %s: %w", dir, err)
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
	tasks, err := s.openChecked(ctx, opts)
	if err != nil {
		return err
	}
	s.w = newWriter(s.db, tasks, s.committed)
	s.w.start()
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
// with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.idleStop != nil {
			s.idleStop()
			<-s.idleDone
		}
		if s.w != nil {
			s.closeErr = s.w.stop()
			s.w.batch.Close()
			if s.closeErr == nil {
				s.closeErr = s.advanceMark(s.gen+1, true, s.durability)
			}
		}
		if err := s.db.Close(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
		if err := s.lock.Close(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
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
}

// Stats returns the writer's counters.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.w.commits.Load(), Changes: s.w.changes.Load(), Failures: s.w.failures.Load(),
		CommitTime: time.Duration(s.w.commitNanos.Load())}
}
