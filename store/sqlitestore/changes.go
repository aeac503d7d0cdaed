package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/bits"
	"strings"
	"sync/atomic"
	"time"

	"github.com/baton-sqs/baton"
)

// A change is one row-level effect of a Store call, recorded when the call
// changed the index and written later by the writer. Every change sets
// absolute values, so writing one twice (after a failed commit) is harmless.
type change interface {
	apply(t *txn) error
}

// afterCommitter is a change told when the transaction holding it has
// committed (once, whatever retries it took).
type afterCommitter interface {
	afterCommit()
}

// queueWrite is a queue-level change (create, update, delete, purge)
// counted in the store's queueWrites until it commits.
type queueWrite struct {
	change
	pending *atomic.Int64
}

func (c *queueWrite) afterCommit() { c.pending.Add(-1) }

// statements are the writer's prepared statements.
type statements struct {
	// begin and commit open and commit the writer's transactions: prepared
	// once, as the driver would otherwise prepare them for every commit, on
	// the one goroutine every commit waits for.
	begin, commit,
	queuePut, queueSeq, queuePurged, queueDelete, tombstonePut,
	msgInsert, msgState, msgDelete, msgMove, msgReclaim,
	dedupPut, dedupDeleteQueue, dedupPrune,
	moveTaskPut *sql.Stmt
	// moveTaskPrune drops a source's finished tasks beyond the newest kept.
	moveTaskPrune *sql.Stmt
	// msgInserts[k] inserts 1<<k messages in one statement.
	msgInserts [insertSizes]*sql.Stmt
}

// insertSizes is how many multi-row inserts the writer prepares: of 1, 2,
// 4, … 1<<(insertSizes-1) rows. One statement per row cost more in the
// driver and database/sql than SQLite's work of inserting the row.
const insertSizes = 6

// msgInsertSQL inserts n messages.
func msgInsertSQL(n int) string {
	return `INSERT OR REPLACE INTO messages (pos, queue_id, id, state, trace_header, attributes, body, body_md5) VALUES ` +
		strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?), `, n-1) + `(?, ?, ?, ?, ?, ?, ?, ?)`
}

// prepare prepares the writer's statements on its connection.
func prepare(ctx context.Context, conn *sql.Conn) (_ *statements, err error) {
	st := &statements{}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	for _, s := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&st.begin, `BEGIN IMMEDIATE`},
		{&st.commit, `COMMIT`},
		{&st.queuePut, `INSERT INTO queues (id, region, account, name, attributes, tags, created_at, modified_at, purged_at, dedup_scope)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET region = excluded.region, account = excluded.account, name = excluded.name, attributes = excluded.attributes,
			tags = excluded.tags, created_at = excluded.created_at, modified_at = excluded.modified_at,
			purged_at = excluded.purged_at, dedup_scope = excluded.dedup_scope`},
		{&st.queueSeq, `UPDATE queues SET last_seq = ? WHERE id = ?`},
		{&st.queuePurged, `UPDATE queues SET purged_at = ?, purged_pos = ? WHERE id = ?`},
		{&st.queueDelete, `DELETE FROM queues WHERE id = ?`},
		{&st.tombstonePut, `INSERT INTO deleted_queues (region, account, name, deleted_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (region, account, name) DO UPDATE SET deleted_at = excluded.deleted_at`},
		{&st.msgInsert, msgInsertSQL(1)},
		{&st.msgState, `UPDATE messages SET state = ? WHERE pos = ?`},
		{&st.msgDelete, `DELETE FROM messages WHERE pos = ?`},
		{&st.msgMove, `UPDATE OR REPLACE messages SET pos = ?, queue_id = ?, state = ? WHERE pos = ?`},
		{&st.msgReclaim, `DELETE FROM messages WHERE pos IN
			(SELECT pos FROM messages WHERE queue_id = ? AND pos <= ? LIMIT ?)`},
		{&st.dedupPut, `INSERT OR REPLACE INTO dedup (queue_id, key, message_id, seq, at) VALUES (?, ?, ?, ?, ?)`},
		{&st.dedupDeleteQueue, `DELETE FROM dedup WHERE queue_id = ?`},
		{&st.dedupPrune, `DELETE FROM dedup WHERE queue_id = ? AND at <= ?`},
		{&st.moveTaskPut, `INSERT OR REPLACE INTO move_tasks (handle, source_arn, destination_arn, max_per_second,
			status, moved, to_move, failure_reason, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&st.moveTaskPrune, `DELETE FROM move_tasks WHERE source_arn = ?1 AND status NOT IN ('RUNNING', 'CANCELLING')
			AND handle NOT IN (SELECT handle FROM move_tasks WHERE source_arn = ?1
				ORDER BY started_at DESC, handle LIMIT ?2)`},
	} {
		stmt, err := conn.PrepareContext(ctx, s.sql)
		if err != nil {
			return nil, fmt.Errorf("prepare %q: %w", s.sql, err)
		}
		*s.dst = stmt
	}
	st.msgInserts[0] = st.msgInsert
	for k := 1; k < insertSizes; k++ {
		stmt, err := conn.PrepareContext(ctx, msgInsertSQL(1<<k))
		if err != nil {
			return nil, fmt.Errorf("prepare the insert of %d messages: %w", 1<<k, err)
		}
		st.msgInserts[k] = stmt
	}
	return st, nil
}

// close closes the statements. A connection's statements are its own to
// close (database/sql tracks only those prepared on a DB): while one is
// open, SQLite keeps the database open past the connection's Close, with
// its files, and skips the checkpoint that ends its last connection.
func (st *statements) close() {
	for _, s := range []*sql.Stmt{st.begin, st.commit, st.queuePut, st.queueSeq, st.queuePurged, st.queueDelete,
		st.tombstonePut, st.msgInsert, st.msgDelete, st.msgState, st.msgMove, st.msgReclaim, st.dedupPut, st.dedupDeleteQueue,
		st.dedupPrune, st.moveTaskPut, st.moveTaskPrune} {
		if s != nil {
			s.Close()
		}
	}
	for _, s := range st.msgInserts[1:] { // [0] is msgInsert
		if s != nil {
			s.Close()
		}
	}
}

// txn is the state of one transaction being written.
type txn struct {
	ctx context.Context
	st  *statements
	// prune is, per FIFO queue, the latest deduplication cutoff of the
	// transaction's sends: keys accepted before it are dropped at the end.
	prune map[uint64]time.Time
	// inserts are message inserts held back to be written together, by
	// flush, before any other change.
	inserts []*msgInsert
	args    []any
}

// flush writes the held inserts, in as few statements as it can.
func (t *txn) flush() error {
	for len(t.inserts) > 0 {
		k := min(bits.Len(uint(len(t.inserts)))-1, insertSizes-1)
		n := 1 << k
		t.args = t.args[:0]
		for _, c := range t.inserts[:n] {
			t.args = append(t.args, c.pos, int64(c.queueID), c.id, c.state, c.pay.trace, c.pay.attrs, c.pay.body, c.pay.bodyMD5)
		}
		if err := t.exec(t.st.msgInserts[k], t.args...); err != nil {
			return err
		}
		t.inserts = t.inserts[n:]
	}
	return nil
}

func (t *txn) exec(s *sql.Stmt, args ...any) error {
	_, err := s.ExecContext(t.ctx, args...)
	return err
}

// finish does what the transaction's changes left for its end.
func (t *txn) finish() error {
	for id, cutoff := range t.prune {
		if err := t.exec(t.st.dedupPrune, int64(id), encTime(cutoff)); err != nil {
			return err
		}
	}
	return nil
}

// queuePut writes a queue's row (all but its sequence counter).
type queuePut struct {
	q     baton.Queue
	attrs string
	tags  string
}

func newQueuePut(q *baton.Queue) (*queuePut, error) {
	attrs, err := json.Marshal(q.Attributes)
	if err != nil {
		return nil, err
	}
	tags := ""
	if q.Tags != nil {
		b, err := json.Marshal(q.Tags)
		if err != nil {
			return nil, err
		}
		tags = string(b)
	}
	return &queuePut{q: *q, attrs: string(attrs), tags: tags}, nil
}

func (c *queuePut) apply(t *txn) error {
	q := &c.q
	return t.exec(t.st.queuePut, int64(q.ID), q.Region, q.Account, q.Name, c.attrs, c.tags,
		encTime(q.CreatedAt), encTime(q.ModifiedAt), encTime(q.PurgedAt), q.DedupScope)
}

// queueDrop deletes a queue and its keys, and remembers when. The rows of
// its messages are left to the reclaimer: no index loads a message of no
// queue.
type queueDrop struct {
	id                    uint64
	region, account, name string
	at                    time.Time
}

func (c *queueDrop) apply(t *txn) error {
	id := int64(c.id)
	for _, step := range []struct {
		s    *sql.Stmt
		args []any
	}{
		{t.st.dedupDeleteQueue, []any{id}},
		{t.st.queueDelete, []any{id}},
		{t.st.tombstonePut, []any{c.region, c.account, c.name, encTime(c.at)}},
	} {
		if err := t.exec(step.s, step.args...); err != nil {
			return err
		}
	}
	delete(t.prune, c.id)
	return nil
}

// queuePurge deletes a queue's keys, records when, and marks every message
// of the queue up to pos through dead; the reclaimer deletes their rows.
type queuePurge struct {
	id      uint64
	at      time.Time
	through int64
}

func (c *queuePurge) apply(t *txn) error {
	id := int64(c.id)
	if err := t.exec(t.st.dedupDeleteQueue, id); err != nil {
		return err
	}
	return t.exec(t.st.queuePurged, encTime(c.at), c.through, id)
}

// msgReclaim deletes up to limit dead rows of a queue: those with pos up to
// through (of a purged queue), or all (of a deleted one, through the
// largest pos). deleted is how many it deleted, once its commit is done.
type msgReclaim struct {
	queueID uint64
	through int64
	limit   int
	deleted int64
}

func (c *msgReclaim) apply(t *txn) error {
	res, err := t.st.msgReclaim.ExecContext(t.ctx, int64(c.queueID), c.through, c.limit)
	if err != nil {
		return err
	}
	c.deleted, err = res.RowsAffected()
	return err
}

// msgInsert stores a new message, payload included.
type msgInsert struct {
	pos     int64
	queueID uint64
	id      string
	state   []byte // encodeState
	pay     payload
}

// apply holds the insert back, for the transaction's flush.
func (c *msgInsert) apply(t *txn) error {
	t.inserts = append(t.inserts, c)
	return nil
}

// msgState writes a message's new state (a receive or visibility change).
type msgState struct {
	pos   int64
	state []byte // encodeState
}

func stateOf(pos int64, m *baton.Message) *msgState {
	return &msgState{pos: pos, state: encodeState(m)}
}

func (c *msgState) apply(t *txn) error { return t.exec(t.st.msgState, c.state, c.pos) }

// msgDelete deletes a message.
type msgDelete struct{ pos int64 }

func (c *msgDelete) apply(t *txn) error { return t.exec(t.st.msgDelete, c.pos) }

// msgMove moves a message to the end of another queue, which gives it a new
// pos, with its new state.
type msgMove struct {
	from, pos int64
	toQueueID uint64
	state     []byte // encodeState
}

func (c *msgMove) apply(t *txn) error {
	return t.exec(t.st.msgMove, c.pos, int64(c.toQueueID), c.state, c.from)
}

// fifoSent records what a FIFO send changed beyond its messages: the keys
// it accepted, the queue's sequence counter and the deduplication cutoff.
type fifoSent struct {
	queueID uint64
	lastSeq string
	keys    []dedupRow
	cutoff  time.Time
}

type dedupRow struct {
	key, messageID, seq string
	at                  time.Time
}

func (c *fifoSent) apply(t *txn) error {
	id := int64(c.queueID)
	for _, k := range c.keys {
		if err := t.exec(t.st.dedupPut, id, k.key, k.messageID, k.seq, encTime(k.at)); err != nil {
			return err
		}
	}
	if c.lastSeq != "" {
		if err := t.exec(t.st.queueSeq, c.lastSeq, id); err != nil {
			return err
		}
	}
	if t.prune == nil {
		t.prune = make(map[uint64]time.Time)
	}
	if c.cutoff.After(t.prune[c.queueID]) {
		t.prune[c.queueID] = c.cutoff
	}
	return nil
}

// moveTaskPut writes a move task's row, replacing the one of its handle.
type moveTaskPut struct{ t baton.MoveTask }

func (c *moveTaskPut) apply(t *txn) error {
	m := &c.t
	if err := t.exec(t.st.moveTaskPut, m.Handle, m.SourceARN, m.DestinationARN, int64(m.MaxPerSecond),
		m.Status, m.Moved, m.ToMove, m.FailureReason, encTime(m.StartedAt)); err != nil {
		return err
	}
	return t.exec(t.st.moveTaskPrune, m.SourceARN, baton.MaxMoveTasksKept)
}
