package pgstore

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

// Receives from a standard queue without message groups run in the rounds
// of group.go. Under load many requests receive from one queue at once;
// alone, each would lease with a statement of its own, and each statement
// would walk past the rows the others have just locked at the head of the
// queue, then commit alone. In a round the receives of one queue share one
// statement: it leases as many messages as they ask for in all, hands them
// out in the order the receives were queued (the earliest sent to the
// first), and commits with the round.

// receiveManySQL leases, from queue $1, up to $5 messages visible at $2
// and sent at $4 or later, the earliest sent (lowest pos) first as far as
// two index range scans of baton_messages_by_state tell: of the $5 never
// leased messages visible longest and the $5 requeued ones visible longest
// (leased before and visible again, a lapsed or released lease), the $5
// with the lowest pos. A requeued message so comes back before the
// messages sent after it, as on SQS, unless more than $5 others were
// requeued before it. Ordering every visible message by pos would read
// them all, or every in-flight one. It hands them out one per slot, the
// k-th in pos order to slot k: the arrays give each slot its now ($6) and
// lease end ($3), those of the receive it belongs to (receiveSlots). It
// returns each message as leased (leasedColumns) and its slot. The
// messages past retention that it meets are dropped, as a receive does.
//
// It reads the queue's kind itself (plainCTE), so that a receive reads
// nothing before its round: from a queue that does not exist or holds a
// message with a group id it leases and drops nothing, and returns one
// row, its slot NULL, instead; its receives then run as MessageReceive
// runs them for such a queue. Unless $7, it runs only in the queue's turn
// (turnCTE): when another transaction has it, it leases and drops nothing
// and returns one row, no message and its slot 0, instead.
var receiveManySQL = `
	WITH ` + plainCTE + `,` + turnCTE + `,` + dropExpired(plainGuard+turnGuard) + `,
	requeued AS (
		SELECT pos FROM baton_messages
		WHERE queue_id = $1 AND group_id = '' AND leased AND visible_at <= $2 AND sent_at >= $4` + plainGuard + turnGuard + `
		ORDER BY visible_at, pos
		LIMIT $5
		FOR UPDATE SKIP LOCKED),
	oldest AS (
		SELECT pos FROM baton_messages
		WHERE queue_id = $1 AND group_id = '' AND NOT leased AND visible_at <= $2 AND sent_at >= $4` + plainGuard + turnGuard + `
		ORDER BY visible_at, pos
		LIMIT $5
		FOR UPDATE SKIP LOCKED),
	picked AS (
		SELECT pos, row_number() OVER (ORDER BY pos) AS slot FROM (
			SELECT pos FROM requeued UNION SELECT pos FROM oldest
			ORDER BY pos
			LIMIT $5) x),
	leased AS (
		UPDATE baton_messages m SET
			receive_count = m.receive_count + 1,
			epoch = m.epoch + 1,
			first_received_at = coalesce(m.first_received_at, ($6::timestamptz[])[p.slot]),
			leased = true,
			leased_at = ($6::timestamptz[])[p.slot],
			visible_at = ($3::timestamptz[])[p.slot]
		FROM picked p
		WHERE m.pos = p.pos AND m.visible_at <= $2
		RETURNING ` + messageColumns + `, p.pos, p.slot)
	SELECT ` + leasedColumns + `, slot FROM leased
	UNION ALL
	SELECT ` + strings.Repeat("NULL, ", strings.Count(messageColumns, ",")+1) + `NULL FROM plain WHERE NOT plain
	UNION ALL
	SELECT ` + strings.Repeat("NULL, ", strings.Count(messageColumns, ",")+1) + `0 FROM plain, turn WHERE plain AND NOT mine
	ORDER BY slot`

// plainCTE says whether queue $1 is a standard queue's without message
// groups, as far as a receive of a queue not FIFO (Store.isFIFO) needs to
// know: it exists, and no message has a group id (a range of the group
// index above the empty group id, found in one probe).
const plainCTE = `
	plain AS MATERIALIZED (
		SELECT EXISTS (SELECT 1 FROM baton_queues WHERE id = $1)
			AND NOT EXISTS (SELECT 1 FROM baton_messages WHERE queue_id = $1 AND group_id > '') AS plain)`

// plainGuard keeps a scan of receiveManySQL to a plain queue (plainCTE).
// The scans for messages to lease say that the group id is empty too (a
// plain queue's messages have none), so that they can use
// baton_messages_by_state, which holds those messages alone; the scan for
// messages past retention does not, so that it keeps to
// baton_messages_by_sent (dropExpired), which holds every message.
const plainGuard = `
		AND (SELECT plain FROM plain)`

// The receive statements of one queue take turns across the servers
// sharing the database. Each round shares one statement among a server's
// receives, but the rounds of several servers would still meet at the
// queue's head at once, each walking past the rows the others have locked
// and the index entries their leases left dead. A queue's turn is a
// transaction-scoped advisory lock, taken by the receive statement itself
// (no round trip of its own) with pg_try_advisory_xact_lock, which never
// waits: PostgreSQL holds it until the round's commit has been flushed
// (and a synchronous standby has confirmed it), so the next statement of
// the queue sees the leases of the last. A round that finds the turn taken
// leases nothing; its receives wait a pause, together with every other
// receive of the queue that arrives meanwhile on this server, then queue
// again as one. A lock that is not given back (a holder whose commit hangs)
// costs a receive at most turnWait: it then runs without its turn, as
// every receive did before turns (FOR UPDATE SKIP LOCKED keeps two
// statements from leasing one message either way). A try never waits in
// the database, so turns cannot deadlock with row locks, group locks or
// task locks.

// turnCTE tries to take queue $1's turn, unless $7 (a receive that has
// waited turnWait). The key is the two-int4 form (pg_locks' objsubid 2)
// under a class of its own ("brcv"); two queues whose ids hash alike share
// a turn, which costs them waits, never a message.
const turnCTE = `
	turn AS MATERIALIZED (
		SELECT $7::boolean OR pg_try_advisory_xact_lock(x'62726376'::int, hashint8($1)) AS mine)`

// turnGuard keeps a scan of receiveManySQL to the queue's turn.
const turnGuard = `
		AND (SELECT mine FROM turn)`

// A receive whose round found the queue's turn taken waits turnPause
// before it queues again, and runs without its turn once it has waited
// turnWait in all. A turn ends with its round's commit, which takes about
// a millisecond on a healthy database.
const (
	turnPause = time.Millisecond
	turnWait  = 20 * time.Millisecond
)

// receiveReady leases from a standard queue without message groups, in a
// round. plain is false, and nothing leased, if the round found the queue
// gone or holding messages with a group id (receiveManySQL).
func (s *Store) receiveReady(ctx context.Context, p baton.MessageReceiveParams) (msgs []*baton.Message, plain bool, err error) {
	o := &op{kind: opReceive, queueID: p.QueueID, now: p.Now, max: p.Max, visibleAt: p.VisibleAt, cutoff: p.RetentionCutoff}
	start := time.Now()
	for {
		if err := s.turns.await(ctx, p.QueueID); err != nil {
			return nil, false, err
		}
		o.anyTurn = time.Since(start) >= turnWait
		if err := s.group.commit(ctx, o); err != nil {
			return nil, false, err
		}
		if !o.busy {
			return o.leased, !o.notPlain, nil
		}
		s.turns.missed.Add(1)
		s.turns.pause(p.QueueID)
	}
}

// turnWaits are a server's receives waiting for their queues' turns: one
// pause per queue, which every receive of the queue that finds it pending
// waits out, so that they queue again together.
type turnWaits struct {
	mu sync.Mutex
	// pending: each queue's pause, closed when it ends.
	pending map[uint64]chan struct{}
	// missed counts the rounds a receive found its queue's turn taken in.
	missed atomic.Int64
}

// pause starts a pause of queue q, unless one is pending.
func (t *turnWaits) pause(q uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.pending[q]; ok {
		return
	}
	if t.pending == nil {
		t.pending = map[uint64]chan struct{}{}
	}
	ch := make(chan struct{})
	t.pending[q] = ch
	time.AfterFunc(turnPause, func() {
		t.mu.Lock()
		delete(t.pending, q)
		t.mu.Unlock()
		close(ch)
	})
}

// await waits out queue q's pending pause, if any, or until ctx ends.
func (t *turnWaits) await(ctx context.Context, q uint64) error {
	t.mu.Lock()
	ch := t.pending[q]
	t.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queueReceives queues a receiveManySQL for each queue the receives name,
// in the order they first name it, and has its rows handed to them. The
// statement takes what is visible at the earliest of their nows and sent
// at the latest of their retention cutoffs or after: a message none of them
// may have.
func queueReceives(b *pgx.Batch, receives []*op) {
	var order []uint64
	byQueue := map[uint64][]*op{}
	for _, o := range receives {
		if _, ok := byQueue[o.queueID]; !ok {
			order = append(order, o.queueID)
		}
		byQueue[o.queueID] = append(byQueue[o.queueID], o)
	}
	for _, q := range order {
		ops := byQueue[q]
		owners, nows, ends := receiveSlots(ops)
		now, cutoff := ops[0].now, ops[0].cutoff
		for _, o := range ops {
			if o.now.Before(now) {
				now = o.now
			}
			if o.cutoff.After(cutoff) {
				cutoff = o.cutoff
			}
		}
		anyTurn := false
		for _, o := range ops {
			anyTurn = anyTurn || o.anyTurn
		}
		b.Queue(receiveManySQL, int64(q), now, ends, cutoff, len(owners), nows, anyTurn).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				switch raw := rows.RawValues(); {
				case raw[len(raw)-1] == nil: // no slot: not a plain queue
					for _, o := range ops {
						o.notPlain = true
					}
					continue
				case raw[0] == nil: // a slot and no message: not the queue's turn
					for _, o := range ops {
						o.busy = true
					}
					continue
				}
				var slot int64
				m, err := scanMessage(rows, &slot)
				if err != nil {
					return err
				}
				o := owners[slot-1]
				o.leased = append(o.leased, m)
			}
			return rows.Err()
		})
	}
}

// receiveSlots gives each receive of ops as many consecutive slots as it
// may take messages, in the order of ops, and returns each slot's receive,
// now and lease end.
func receiveSlots(ops []*op) (owners []*op, nows, ends []time.Time) {
	for _, o := range ops {
		for range o.max {
			owners, nows, ends = append(owners, o), append(nows, o.now), append(ends, o.visibleAt)
		}
	}
	return owners, nows, ends
}
