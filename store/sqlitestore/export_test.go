package sqlitestore

import (
	"database/sql"
	"testing"

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

// SetSchemaVersion records version as applied in the database at path, as a
// newer baton would.
func SetSchemaVersion(path string, version int) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(`INSERT INTO schema_migrations (version) VALUES (?)`, version)
	return err
}

// HoldCommits makes the writer wait on release before each transaction
// begins. It returns a channel told each time the writer starts waiting and
// a function reporting how many changes are queued behind the held
// transaction. Call it while the writer is idle.
func HoldCommits(s *Store, release <-chan struct{}) (held <-chan struct{}, queued func() int) {
	h := make(chan struct{}, 1)
	s.w.beforeCommit = func() {
		select {
		case h <- struct{}{}:
		default:
		}
		<-release
	}
	return h, func() int {
		s.w.mu.Lock()
		defer s.w.mu.Unlock()
		return len(s.w.open.changes)
	}
}

// UndoBodyMD5 takes the database at path back to the schema before the
// body_md5 column (and the later purged_pos), as an older baton left it.
func UndoBodyMD5(path string) error {
	if err := UndoRegion(path); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, stmt := range []string{`ALTER TABLE messages DROP COLUMN body_md5`, `ALTER TABLE queues DROP COLUMN purged_pos`} {
		if _, err := db.Exec(stmt); err != nil {
			return err
		}
	}
	_, err = db.Exec(`DELETE FROM schema_migrations WHERE version >= 3`)
	return err
}

// UndoRegion takes the database at path back to the schema before queues
// had a region, as an older baton left it.
func UndoRegion(path string) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, stmt := range []string{
		`ALTER TABLE queues DROP COLUMN region`,
		`CREATE TABLE deleted_queues_old (account TEXT NOT NULL, name TEXT NOT NULL, deleted_at INTEGER NOT NULL,
			PRIMARY KEY (account, name)) WITHOUT ROWID`,
		`INSERT INTO deleted_queues_old SELECT account, name, deleted_at FROM deleted_queues`,
		`DROP TABLE deleted_queues`,
		`ALTER TABLE deleted_queues_old RENAME TO deleted_queues`,
		`DELETE FROM schema_migrations WHERE version >= 5`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			return err
		}
	}
	return nil
}

// HoldReclaim keeps the reclaimer from deleting another chunk of dead rows
// until the returned function is called (once). Close does not wait for it.
func HoldReclaim(s *Store) (release func()) {
	gate := make(chan struct{})
	s.reclaim.mu.Lock()
	s.reclaim.gate = gate
	s.reclaim.mu.Unlock()
	return func() {
		s.reclaim.mu.Lock()
		s.reclaim.gate = nil
		s.reclaim.mu.Unlock()
		close(gate)
	}
}

// Rows counts the rows of the messages table, dead ones included.
func Rows(tb testing.TB, s *Store) int {
	tb.Helper()
	var n int
	if err := s.rdb.QueryRowContext(tb.Context(), `SELECT count(*) FROM messages`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}
