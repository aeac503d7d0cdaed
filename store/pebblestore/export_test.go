package pebblestore

import (
	"database/sql"
	"log/slog"
	"os"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/baton-sqs/baton"
)

// PendingPayloads counts the payloads held in memory for uncommitted sends.
func PendingPayloads(s *Store) int {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	return len(s.pending)
}

// IndexMessage returns the index's copy of a message, as it holds it. It
// asks by a lease no message has, which changes nothing.
func IndexMessage(tb testing.TB, s *Store, queueID uint64, id string) *baton.Message {
	tb.Helper()
	out, err := s.index.MessageChangeVisibility(tb.Context(), baton.MessageChangeVisibilityParams{
		QueueID: queueID, MessageID: id, Epoch: ^uint32(0),
	})
	if err != nil || out.Message == nil {
		tb.Fatalf("index message %s: %+v, %v", id, out, err)
	}
	return out.Message
}

// SetFormat records version as the format of the log in dir, as a newer
// baton would.
func SetFormat(dir string, version byte) error {
	db, err := pebble.Open(dir, &pebble.Options{Logger: logger{slog.New(slog.DiscardHandler)}})
	if err != nil {
		return err
	}
	if err := db.Set(formatKey, []byte{version}, pebble.Sync); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

// HoldCommits makes the writer wait on release before each round is
// written. It returns a channel told each time the writer starts waiting
// and a function reporting how many changes are queued behind the held
// round. Call it while the writer is idle.
func HoldCommits(s *Store, release <-chan struct{}) (held <-chan struct{}, queued func() int) {
	h := make(chan struct{}, 1)
	hook := func() error {
		select {
		case h <- struct{}{}:
		default:
		}
		<-release
		return nil
	}
	s.w.beforeCommit.Store(&hook)
	return h, func() int {
		s.w.mu.Lock()
		defer s.w.mu.Unlock()
		return len(s.w.open.changes)
	}
}

// Messages counts the message records a reader of the log finds: those
// of the messages of every queue.
func Messages(tb testing.TB, s *Store) int {
	tb.Helper()
	n := 0
	lo, hi := span(kindState)
	if err := s.scan(lo, hi, func(_, _ []byte) error { n++; return nil }); err != nil {
		tb.Fatal(err)
	}
	return n
}

// UndoBodyMD5 takes the SQLite database at path back to the schema before
// the body_md5 column (and the later purged_pos and region), as an older
// baton left it.
func UndoBodyMD5(path string) error {
	if err := UndoRegion(path); err != nil {
		return err
	}
	return execAll(path,
		`ALTER TABLE messages DROP COLUMN body_md5`,
		`ALTER TABLE queues DROP COLUMN purged_pos`,
		`DELETE FROM schema_migrations WHERE version >= 3`)
}

// UndoRegion takes the SQLite database at path back to the schema before
// queues had a region, as an older baton left it.
func UndoRegion(path string) error {
	return execAll(path,
		`ALTER TABLE queues DROP COLUMN region`,
		`CREATE TABLE deleted_queues_old (account TEXT NOT NULL, name TEXT NOT NULL, deleted_at INTEGER NOT NULL,
			PRIMARY KEY (account, name)) WITHOUT ROWID`,
		`INSERT INTO deleted_queues_old SELECT account, name, deleted_at FROM deleted_queues`,
		`DROP TABLE deleted_queues`,
		`ALTER TABLE deleted_queues_old RENAME TO deleted_queues`,
		`DELETE FROM schema_migrations WHERE version >= 5`)
}

// SetSchemaVersion records version as applied in the SQLite database at
// path, as a newer baton would.
func SetSchemaVersion(path string, version int) error {
	return execAll(path, `INSERT INTO schema_migrations (version) VALUES (`+strconv.Itoa(version)+`)`)
}

// ExecSQLite runs stmts on the SQLite database at path.
func ExecSQLite(path string, stmts ...string) error { return execAll(path, stmts...) }

func execAll(path string, stmts ...string) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			return err
		}
	}
	return nil
}

// FailConversionAt makes conversions stop with err at the named step (see
// convert.go) until the returned function is called.
func FailConversionAt(name string, err error) (restore func()) {
	convertStep = func(s string) error {
		if s == name {
			return err
		}
		return nil
	}
	return func() { convertStep = nil }
}

// OnConversionStep makes conversions call fn after each step (see
// convert.go), and stop with the error it returns, until the returned
// function is called.
func OnConversionStep(fn func(step string) error) (restore func()) {
	convertStep = fn
	return func() { convertStep = nil }
}

// KillConversionAt makes a conversion kill this process (SIGKILL where the
// platform has it) at the named step.
func KillConversionAt(name string) {
	convertStep = func(s string) error {
		if s == name {
			self, err := os.FindProcess(os.Getpid())
			if err == nil {
				err = self.Kill()
			}
			if err == nil {
				select {} // the kill is on its way
			}
			return err
		}
		return nil
	}
}

// FlushedDeletions flushes the log's memtables to tables and counts the
// deletions the tables hold.
func FlushedDeletions(tb testing.TB, s *Store) uint64 {
	tb.Helper()
	if err := s.db.Flush(); err != nil {
		tb.Fatal(err)
	}
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		tb.Fatal(err)
	}
	var n uint64
	for _, tables := range levels {
		for _, t := range tables {
			n += t.Properties.NumDeletions
		}
	}
	return n
}

// RotatingManifest makes the log start a new MANIFEST (and move the marker
// naming the current one) at nearly every flush, as a log grown large does.
func RotatingManifest(o Options) Options {
	o.manifestSize = 1
	return o
}

// FlushLog flushes the log's memtables to a table, and returns its error.
func FlushLog(s *Store) error { return s.db.Flush() }
