package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
)

// Files of a data directory.
const (
	// DatabaseFile is the SQLite database (with its -wal and -shm files).
	DatabaseFile = "baton.db"
	// LockFile is held locked by the process that has the directory open.
	LockFile = "lock"
)

// ErrLocked is returned by Open when another process has the data directory
// open.
var ErrLocked = errors.New("the data directory is in use by another baton process")

// Durability says when a commit counts as done.
type Durability int

const (
	// DurabilityFull fsyncs every commit (SQLite synchronous=FULL): an
	// acknowledged change survives a process crash and a power loss.
	DurabilityFull Durability = iota
	// DurabilityRelaxed leaves commits in the operating system's cache
	// (synchronous=NORMAL; the WAL is fsynced at checkpoints): an
	// acknowledged change survives a crash or kill of the process, but the
	// last commits before a power loss or kernel crash may be lost. The
	// database stays consistent either way.
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
	// had one gives its queues when Open migrates it (default us-east-1):
	// the region the server served them in, its --region.
	DefaultRegion string
}

// stripes is how many locks order the changes of queues: a queue's changes
// are made and queued under its stripe's lock.
const stripes = 64

// Store is the embedded durable baton.Store. It is safe for concurrent use.
//
// A call that changes something returns once the change is committed, and
// one that changed nothing once every change it may have seen is: no answer
// rests on state a crash could take back. A failed commit (a full or
// read-only disk) fails the calls waiting for it with an error; their
// changes stay applied in memory and are written with the next commit, so a
// call that failed may still take effect, as may any SQS call that errs.
//
// Lock order: qmu, then stripe locks (lower index first), then the index's
// own locks, then the writer's and pendMu.
type Store struct {
	dir   string
	index *memstore.Store
	wdb   *sql.DB // one connection: the writer's
	rdb   *sql.DB // readers of payloads
	w     *writer
	lock  *os.File
	// reclaim deletes the rows of purged and deleted queues' messages.
	reclaim *reclaimer

	// qmu orders the queue-level calls (create, update, delete, purge).
	qmu sync.Mutex
	// queueWrites counts the queue-level changes made in memory and not
	// committed yet (queueWrite): while there are any, reads of queues wait
	// for the latest commit, so that no caller is answered from a queue
	// whose creation, say, a crash would undo. It is raised under qmu
	// before the index changes.
	queueWrites atomic.Int64

	stripes [stripes]sync.Mutex
	// dropped collects, per stripe, the pos of the messages the index
	// dropped as past retention during the call holding the stripe's lock.
	dropped [stripes][]int64
	// pos numbers messages in the order they joined their queue. A
	// message's pos, the key of its database row, is its key in the index
	// (memstore's SetKey).
	pos atomic.Int64

	// pending holds, by pos, the payloads of rows not committed yet: those
	// of queued inserts, and those of queued moves, whose row keeps its old
	// pos until the move commits. A receive may take such a message before
	// the commit.
	pendMu  sync.Mutex
	pending map[int64]payload

	readMu    sync.Mutex
	readStmts map[int]*sql.Stmt // payload reads by number of rows

	closeOnce sync.Once
	closeErr  error
}

var _ baton.Store = (*Store)(nil)

// Open opens the store in dir, creating the directory and the database if
// needed, applies the schema's migrations and rebuilds the in-memory index.
// It returns an error wrapping ErrLocked if another process has dir open.
//
// Open switches SQLite, process-wide, to commit with fdatasync(2) instead of
// fsync(2) where the platform has it: as durable, and cheaper per commit.
func Open(ctx context.Context, dir string, opts Options) (*Store, error) {
	sqlite.Fdatasync(true) // fails only where unavailable: fsync it is, then
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: data directory: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, LockFile))
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: %w", dir, err)
	}
	s := &Store{dir: dir, lock: lock, pending: make(map[int64]payload), readStmts: make(map[int]*sql.Stmt)}
	s.index = memstore.NewWithOptions(memstore.Options{ExpiredFunc: s.expired})
	if err := s.open(ctx, opts); err != nil {
		s.closeDBs()
		lock.Close()
		return nil, fmt.Errorf("sqlitestore: %s: %w", dir, err)
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, opts Options) error {
	sync := "FULL"
	if opts.Durability == DurabilityRelaxed {
		sync = "NORMAL"
	}
	path := filepath.Join(s.dir, DatabaseFile)
	if strings.Contains(path, "?") {
		return errors.New("the path of the data directory may not contain '?'")
	}
	// The driver takes the file name up to the '?' and its own
	// parameters after it.
	dsn := func(pragmas ...string) string {
		q := url.Values{}
		for _, p := range append([]string{"busy_timeout(10000)"}, pragmas...) {
			q.Add("_pragma", p)
		}
		return path + "?" + q.Encode()
	}
	var err error
	if s.wdb, err = sql.Open("sqlite", dsn("journal_mode(WAL)", "synchronous("+sync+")")); err != nil {
		return err
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetConnMaxIdleTime(0)
	s.wdb.SetConnMaxLifetime(0)
	region := opts.DefaultRegion
	if region == "" {
		region = "us-east-1"
	}
	if !baton.ValidRegion(region) {
		return fmt.Errorf("%q is not a region name", region)
	}
	if err := migrateSchema(ctx, s.wdb, region); err != nil {
		return err
	}
	if s.rdb, err = sql.Open("sqlite", dsn("query_only(1)")); err != nil {
		return err
	}
	s.rdb.SetMaxOpenConns(4)
	s.rdb.SetMaxIdleConns(4)
	jobs, err := s.load(ctx)
	if err != nil {
		return err
	}
	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		return err
	}
	st, err := prepare(ctx, conn)
	if err != nil {
		conn.Close()
		return err
	}
	s.w = newWriter(conn, st, s.committed)
	s.w.start()
	s.reclaim = newReclaimer(s.w)
	for _, j := range jobs {
		s.reclaim.add(j)
	}
	s.reclaim.start()
	return nil
}

// Close commits what is queued and closes the database. Calls after Close
// fail with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.reclaim != nil {
			s.reclaim.stop()
		}
		if s.w != nil {
			s.closeErr = s.w.stop()
			s.w.st.close()
			s.w.conn.Close()
		}
		if err := s.closeDBs(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
		if err := s.lock.Close(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}

func (s *Store) closeDBs() error {
	var errs []error
	for _, db := range []*sql.DB{s.rdb, s.wdb} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// Stats are counters of the writer since Open.
type Stats struct {
	// Commits is how many transactions were committed.
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
