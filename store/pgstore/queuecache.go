package pgstore

import (
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
)

// Every request names its queue, and QueueGet reads the queue's row by
// that name. A server keeps the row it read for queueCacheTTL, and answers
// QueueGet from it meanwhile, while its listener listens (notify.go):
//
//   - A change to a queue (QueueCreate, QueueUpdate, QueueDelete,
//     QueuePurge) notifies queueChannel in its own transaction, so every
//     listening server hears of it once it has committed, and drops the
//     row; the server that made it drops the row itself once it commits.
//   - While the listener is down no row is kept (a notification could be
//     missed), and every row kept is dropped when it goes down and when it
//     listens again.
//   - A read that began before a change was heard of keeps nothing: each
//     drop moves the cache to a new generation, and a read keeps its row
//     only if the generation is the one it began in.
//   - queueCacheTTL bounds what a lost notification can cost, such as one
//     sent just before its server died, or one a silently dead listening
//     connection missed before its check (listenCheck) found it dead.
//
// A kept row can thus be behind a change another server made by the time
// its notification takes to arrive, and at worst by queueCacheTTL. SQS's
// own changes take up to 60 seconds to propagate (SetQueueAttributes), and
// requests to a queue during the 60 seconds its deletion takes may succeed
// (DeleteQueue). What a row kept of a deleted queue does:
//
//   - Sends, receives, deletes, visibility changes, moves, counts,
//     expiries and browses name the queue by its id, and their statements find it gone
//     (the send's baton_lock_queues, the receive round's check, lease's
//     queueExists, ...): they store nothing and answer ErrNotFound
//     (QueueDoesNotExist), and the row is dropped (dropID).
//   - GetQueueUrl, ListQueueTags and GetQueueAttributes without counts may
//     answer from the row, as SQS may during a deletion.
//
// Actions that write back what they read (SetQueueAttributes, the
// permissions, TagQueue's count, CreateQueue's comparison), and a
// receive's dead-letter move, read the row as it stands (baton.Fresh). A
// queue's FIFO kind and its DedupScope never change; PurgedAt, which a
// purge changes, no request reads.
//
// Rows that are not found are not kept: a queue another server has just
// created is found at once.

// queueCacheTTL is how long a server answers from a queue's row it read.
const queueCacheTTL = time.Second

// queueCacheMax bounds the rows kept; past it the expired ones are dropped.
const queueCacheMax = 10000

// queueChannel is the NOTIFY channel of changes to queues. A payload is
// "<origin> <region> <account> <name>" (queueChange).
const queueChannel = "baton_queue"

// queueCache keeps the queues' rows read by name.
type queueCache struct {
	clock clock.Clock

	mu sync.Mutex
	// on is whether the listener listens: rows are kept only then.
	on bool
	// gen counts the drops: a read keeps its row only if none happened
	// since it began.
	gen  uint64
	rows map[string]cachedQueue
}

// cachedQueue is a row kept and when it was read.
type cachedQueue struct {
	q  *baton.Queue
	at time.Time
}

// queueKey is the key of a queue's row: its region, account and name.
func queueKey(region, account, name string) string {
	return region + " " + account + " " + name
}

// get returns a copy of the queue kept under key, if one is kept and not
// expired.
func (c *queueCache) get(key string) (*baton.Queue, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.rows[key]
	if !ok || !c.on {
		return nil, false
	}
	if c.clock.Now().Sub(e.at) >= queueCacheTTL {
		delete(c.rows, key)
		return nil, false
	}
	return copyQueue(e.q), true
}

// generation is what a read records as it begins, for put.
func (c *queueCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put keeps q, read by a read that began in generation gen, unless a drop
// came since or the listener does not listen.
func (c *queueCache) put(key string, q *baton.Queue, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on || gen != c.gen {
		return
	}
	now := c.clock.Now()
	if len(c.rows) >= queueCacheMax {
		for k, e := range c.rows {
			if now.Sub(e.at) >= queueCacheTTL {
				delete(c.rows, k)
			}
		}
		if len(c.rows) >= queueCacheMax {
			clear(c.rows)
		}
	}
	if c.rows == nil {
		c.rows = map[string]cachedQueue{}
	}
	c.rows[key] = cachedQueue{q: copyQueue(q), at: now}
}

// drop forgets the row under key.
func (c *queueCache) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.rows, key)
}

// dropID forgets the row of the queue id, which was found gone.
func (c *queueCache) dropID(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k, e := range c.rows {
		if e.q.ID == id {
			delete(c.rows, k)
		}
	}
}

// listening forgets every row, and keeps rows from now on if on: the
// listener has begun to listen (on) or stopped (not on).
func (c *queueCache) listening(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.on = on
	clear(c.rows)
}

// copyQueue copies q, tags included: each caller gets a queue of its own.
func copyQueue(q *baton.Queue) *baton.Queue {
	c := *q
	c.Tags = maps.Clone(q.Tags)
	return &c
}

// queueChange is the payload of a change to the queue under key.
func queueChange(origin, key string) string {
	return origin + " " + key
}

// parseQueueChange splits a payload of queueChannel.
func parseQueueChange(payload string) (origin, key string, ok bool) {
	origin, key, ok = strings.Cut(payload, " ")
	return origin, key, ok && key != ""
}
