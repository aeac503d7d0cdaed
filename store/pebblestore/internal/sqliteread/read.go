// Package sqliteread reads the data directory of the embedded store as
// releases before the Pebble log wrote it: one SQLite database, baton.db,
// with its write-ahead log. The store converts such a directory when it
// first opens it (see docs/architecture.md); nothing writes this format any
// more, so only what reading it needs is here: opening it, bringing an
// older schema up to date, and reading every table.
package sqliteread

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/baton-sqs/baton"
)

// DatabaseFile is the SQLite database, beside which SQLite keeps its -wal
// and -shm files.
const DatabaseFile = "baton.db"

// Files are the names of the files of an SQLite store in its directory.
var Files = []string{DatabaseFile + "-wal", DatabaseFile + "-shm", DatabaseFile}

// Reader reads one SQLite store.
type Reader struct{ db *sql.DB }

// Open opens the database at path and migrates it to the latest schema
// this package reads (the migrations, in the same transactions, are those
// the store applied itself). defaultRegion is the region of the queues of
// a database written before queues had one.
func Open(ctx context.Context, path, defaultRegion string) (*Reader, error) {
	if strings.Contains(path, "?") {
		return nil, errors.New("the path of the data directory may not contain '?'")
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := migrateSchema(ctx, db, defaultRegion); err != nil {
		db.Close()
		return nil, err
	}
	return &Reader{db: db}, nil
}

// Close closes the database; SQLite checkpoints its log on the way.
func (r *Reader) Close() error { return r.db.Close() }

// Queue is a queue's row.
type Queue struct {
	baton.Queue
	// LastSeq is the SequenceNumber last given to a message of the queue.
	LastSeq string
	// PurgedPos: the queue's messages with pos up to it are dead, purged.
	PurgedPos int64
}

// Dedup is a FIFO deduplication key a queue accepted.
type Dedup struct {
	QueueID                   uint64
	Key, MessageID, SeqNumber string
	At                        time.Time
}

// Tombstone is when a queue name was last deleted.
type Tombstone struct {
	Region, Account, Name string
	At                    time.Time
}

// Message is a message's row. State and Attributes are in the encodings
// the embedded store still uses for them.
type Message struct {
	Pos           int64
	QueueID       uint64
	ID            string
	State         []byte
	Trace         string
	Attributes    []byte
	Body, BodyMD5 string
}

// unixNano reads a time stored as Unix nanoseconds, 0 for the zero time.
func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Queues reads every queue.
func (r *Reader) Queues(ctx context.Context) ([]Queue, error) {
	var out []Queue
	err := r.each(ctx, `SELECT id, region, account, name, attributes, tags, created_at, modified_at,
		purged_at, dedup_scope, last_seq, purged_pos FROM queues`, func(rows *sql.Rows) error {
		var (
			q                         Queue
			id                        int64
			attrs, tags               string
			created, modified, purged int64
		)
		if err := rows.Scan(&id, &q.Region, &q.Account, &q.Name, &attrs, &tags, &created, &modified, &purged,
			&q.DedupScope, &q.LastSeq, &q.PurgedPos); err != nil {
			return err
		}
		q.ID = uint64(id)
		q.CreatedAt, q.ModifiedAt, q.PurgedAt = unixNano(created), unixNano(modified), unixNano(purged)
		if err := json.Unmarshal([]byte(attrs), &q.Attributes); err != nil {
			return fmt.Errorf("queue %s: attributes: %w", q.Name, err)
		}
		if tags != "" {
			if err := json.Unmarshal([]byte(tags), &q.Tags); err != nil {
				return fmt.Errorf("queue %s: tags: %w", q.Name, err)
			}
		}
		out = append(out, q)
		return nil
	})
	return out, err
}

// Dedup reads every deduplication key.
func (r *Reader) Dedup(ctx context.Context) ([]Dedup, error) {
	var out []Dedup
	err := r.each(ctx, `SELECT queue_id, key, message_id, seq, at FROM dedup`, func(rows *sql.Rows) error {
		var (
			d      Dedup
			id, at int64
		)
		if err := rows.Scan(&id, &d.Key, &d.MessageID, &d.SeqNumber, &at); err != nil {
			return err
		}
		d.QueueID, d.At = uint64(id), unixNano(at)
		out = append(out, d)
		return nil
	})
	return out, err
}

// Tombstones reads when each deleted queue name was deleted.
func (r *Reader) Tombstones(ctx context.Context) ([]Tombstone, error) {
	var out []Tombstone
	err := r.each(ctx, `SELECT region, account, name, deleted_at FROM deleted_queues`, func(rows *sql.Rows) error {
		var (
			t  Tombstone
			at int64
		)
		if err := rows.Scan(&t.Region, &t.Account, &t.Name, &at); err != nil {
			return err
		}
		t.At = unixNano(at)
		out = append(out, t)
		return nil
	})
	return out, err
}

// MoveTasks reads every message move task.
func (r *Reader) MoveTasks(ctx context.Context) ([]baton.MoveTask, error) {
	var out []baton.MoveTask
	err := r.each(ctx, `SELECT handle, source_arn, destination_arn, max_per_second,
		status, moved, to_move, failure_reason, started_at FROM move_tasks`, func(rows *sql.Rows) error {
		var (
			t             baton.MoveTask
			rate, started int64
		)
		if err := rows.Scan(&t.Handle, &t.SourceARN, &t.DestinationARN, &rate, &t.Status, &t.Moved, &t.ToMove,
			&t.FailureReason, &started); err != nil {
			return err
		}
		t.MaxPerSecond, t.StartedAt = int(rate), unixNano(started)
		out = append(out, t)
		return nil
	})
	return out, err
}

// Messages calls fn with every message row in pos order, dead ones (of
// purged and deleted queues) included. fn may keep nothing of m past its
// return but its strings.
func (r *Reader) Messages(ctx context.Context, fn func(m *Message) error) error {
	var m Message
	return r.each(ctx, `SELECT pos, queue_id, id, state, trace_header, attributes, body, body_md5
		FROM messages ORDER BY pos`, func(rows *sql.Rows) error {
		var queueID int64
		var state, attrs sql.RawBytes
		if err := rows.Scan(&m.Pos, &queueID, &m.ID, &state, &m.Trace, &attrs, &m.Body, &m.BodyMD5); err != nil {
			return err
		}
		m.QueueID, m.State, m.Attributes = uint64(queueID), state, attrs
		return fn(&m)
	})
}

// each runs query and calls fn on each row.
func (r *Reader) each(ctx context.Context, query string, fn func(*sql.Rows) error) error {
	rows, err := r.db.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return rows.Close()
}
