package pebblestore

import (
	"cmp"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/baton-sqs/baton"
)

// A change is one effect of a Store call on the log, recorded when the call
// changed the index and written later by the writer into the batch of its
// round. Every change sets absolute values, so writing one again after a
// round failed before its commit is harmless; a commit whose write to the
// log fails in Pebble never returns (walwatch.go), so no round is written
// twice.
type change interface {
	apply(t *txn) error
}

// afterCommitter is a change told when the batch holding it has committed
// (once, whatever retries it took).
type afterCommitter interface {
	afterCommit()
}

// queueWrite is a queue-level change (create, update, delete, purge)
// counted in the store's queueWrites, under its queue's name, until it
// commits.
type queueWrite struct {
	change
	pending *pendingQueues
	name    queueName
}

func (c *queueWrite) afterCommit() { c.pending.done(c.name) }

// txn is the batch of one round being written.
type txn struct {
	b *pebble.Batch
	w *writer
	// prune is, per FIFO queue, the latest deduplication cutoff of the
	// round's sends: keys accepted before it are dropped at the end.
	prune map[uint64]time.Time
	// key and val are scratch space: a batch copies what it is given.
	key, val []byte
	// removed counts the messages whose records the round deletes (a
	// move's old ones included).
	removed int64
}

// setMessage writes kind's key of a message.
func (t *txn) setMessage(kind byte, queueID uint64, pos int64, value []byte) error {
	t.key = appendQueueKey(t.key[:0], kind, queueID, uint64(pos))
	return t.b.Set(t.key, value, nil)
}

// deleteMessage deletes both records of a message. The payload's is a
// single deletion: a payload key is written once in its life (a message
// gets a new pos when it joins a queue, and a pos taken again after a
// restart follows its earlier key's deletion), so the deletion and the
// write vanish together when a flush or compaction meets them, where an
// ordinary deletion would stay as a tombstone down to the last level. The
// state, rewritten by every receive, keeps an ordinary deletion.
func (t *txn) deleteMessage(queueID uint64, pos int64) error {
	t.removed++
	t.key = appendQueueKey(t.key[:0], kindState, queueID, uint64(pos))
	if err := t.b.Delete(t.key, nil); err != nil {
		return err
	}
	t.key = appendQueueKey(t.key[:0], kindPayload, queueID, uint64(pos))
	return t.b.SingleDelete(t.key, nil)
}

// setPayload writes a message's payload.
func (t *txn) setPayload(queueID uint64, pos int64, p *payload) error {
	t.val = appendPayload(t.val[:0], p)
	return t.setMessage(kindPayload, queueID, pos, t.val)
}

// deleteSpan deletes the keys of the kinds of queueID with their first
// integer from 0 through last.
func (t *txn) deleteSpan(queueID, last uint64, kinds ...byte) error {
	for _, kind := range kinds {
		start, end := queueSpan(kind, queueID, last)
		if err := t.b.DeleteRange(start, end, nil); err != nil {
			return err
		}
	}
	return nil
}

// finish does what the round's changes left for its end: drop the
// deduplication keys past their interval, at most once a second per queue
// (the index ignores those it finds past it; each drop is a range
// tombstone, which reads must step over until compaction removes it).
func (t *txn) finish() error {
	for id, cutoff := range t.prune {
		through := cutoff.Truncate(time.Second)
		if !through.After(t.w.pruned[id]) {
			continue
		}
		if err := t.deleteSpan(id, uint64(encTime(through)), kindDedup); err != nil {
			return err
		}
		t.w.pruned[id] = through
	}
	return nil
}

// queuePut writes a queue (all but its sequence counter).
type queuePut struct {
	id  uint64
	rec []byte // encodeQueue
}

func newQueuePut(q *baton.Queue) (*queuePut, error) {
	rec, err := encodeQueue(q)
	if err != nil {
		return nil, err
	}
	return &queuePut{id: q.ID, rec: rec}, nil
}

func (c *queuePut) apply(t *txn) error { return t.b.Set(queueKey(kindQueue, c.id), c.rec, nil) }

// queueDrop deletes a queue, its messages and keys with range deletions,
// and remembers when.
type queueDrop struct {
	id                    uint64
	region, account, name string
	at                    time.Time
}

func (c *queueDrop) apply(t *txn) error {
	if err := t.deleteSpan(c.id, ^uint64(0), kindState, kindPayload, kindDedup); err != nil {
		return err
	}
	for _, kind := range []byte{kindQueue, kindSeq} {
		if err := t.b.Delete(queueKey(kind, c.id), nil); err != nil {
			return err
		}
	}
	delete(t.prune, c.id)
	delete(t.w.pruned, c.id)
	return t.b.Set(tombstoneKey(c.region, c.account, c.name), encodeNanos(c.at), nil)
}

// queuePurge writes the purged queue and deletes, with range deletions, its
// deduplication keys and every message it held: those with pos up to
// through.
type queuePurge struct {
	put     *queuePut
	through int64
}

func (c *queuePurge) apply(t *txn) error {
	if err := t.deleteSpan(c.put.id, uint64(c.through), kindState, kindPayload); err != nil {
		return err
	}
	if err := t.deleteSpan(c.put.id, ^uint64(0), kindDedup); err != nil {
		return err
	}
	delete(t.w.pruned, c.put.id)
	return c.put.apply(t)
}

// msgInsert stores a new message, payload included.
type msgInsert struct {
	pos     int64
	queueID uint64
	rec     []byte // encodeRecord
	pay     payload
}

func (c *msgInsert) apply(t *txn) error {
	if err := t.setMessage(kindState, c.queueID, c.pos, c.rec); err != nil {
		return err
	}
	return t.setPayload(c.queueID, c.pos, &c.pay)
}

// msgState writes a message's new state (a receive or visibility change).
type msgState struct {
	queueID uint64
	pos     int64
	rec     []byte // encodeRecord
}

func stateOf(queueID uint64, pos int64, m *baton.Message) *msgState {
	return &msgState{queueID: queueID, pos: pos, rec: encodeRecord(m.ID, m)}
}

func (c *msgState) apply(t *txn) error { return t.setMessage(kindState, c.queueID, c.pos, c.rec) }

// msgDelete deletes a message.
type msgDelete struct {
	queueID uint64
	pos     int64
}

func (c *msgDelete) apply(t *txn) error { return t.deleteMessage(c.queueID, c.pos) }

// msgMove moves a message to the end of another queue, which gives it a new
// pos, with its new state; its payload is written again under its new key.
type msgMove struct {
	fromQueueID, toQueueID uint64
	from, pos              int64
	rec                    []byte   // encodeRecord
	pay                    *payload // nil if the message had none
}

func (c *msgMove) apply(t *txn) error {
	if err := t.deleteMessage(c.fromQueueID, c.from); err != nil {
		return err
	}
	if err := t.setMessage(kindState, c.toQueueID, c.pos, c.rec); err != nil {
		return err
	}
	if c.pay == nil {
		return nil
	}
	return t.setPayload(c.toQueueID, c.pos, c.pay)
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
	for _, k := range c.keys {
		if err := t.b.Set(dedupKey(c.queueID, k.at, k.key), encodeDedup(k.messageID, k.seq), nil); err != nil {
			return err
		}
	}
	if c.lastSeq != "" {
		if err := t.b.Set(queueKey(kindSeq, c.queueID), []byte(c.lastSeq), nil); err != nil {
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

// moveTaskPut writes a move task, replacing the one of its handle, and
// deletes its source's finished tasks beyond the newest kept.
type moveTaskPut struct{ t baton.MoveTask }

func (c *moveTaskPut) apply(t *txn) error {
	rec, err := encodeTask(&c.t)
	if err != nil {
		return err
	}
	if err := t.b.Set(taskKey(c.t.Handle), rec, nil); err != nil {
		return err
	}
	t.w.tasks[c.t.Handle] = c.t
	for _, h := range t.w.tasksBeyondKept(c.t.SourceARN) {
		delete(t.w.tasks, h)
		if err := t.b.Delete(taskKey(h), nil); err != nil {
			return err
		}
	}
	return nil
}

// tasksBeyondKept returns the handles of the finished tasks of source past
// its baton.MaxMoveTasksKept newest (by start, then handle).
func (w *writer) tasksBeyondKept(source string) []string {
	var of []baton.MoveTask
	for _, task := range w.tasks {
		if task.SourceARN == source {
			of = append(of, task)
		}
	}
	if len(of) <= baton.MaxMoveTasksKept {
		return nil
	}
	slices.SortFunc(of, func(a, b baton.MoveTask) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Handle, b.Handle)
	})
	var out []string
	for _, task := range of[baton.MaxMoveTasksKept:] {
		if task.Finished() {
			out = append(out, task.Handle)
		}
	}
	return out
}
