package pgstore

import (
	"context"
	"strings"
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
// runs them for such a queue.
var receiveManySQL = `
	WITH ` + plainCTE + `,` + dropExpired(plainGuard) + `,
	requeued AS (
		SELECT pos FROM baton_messages
		WHERE queue_id = $1 AND group_id = '' AND leased AND visible_at <= $2 AND sent_at >= $4` + plainGuard + `
		ORDER BY visible_at, pos
		LIMIT $5
		FOR UPDATE SKIP LOCKED),
	oldest AS (
		SELECT pos FROM baton_messages
		WHERE queue_id = $1 AND group_id = '' AND NOT leased AND visible_at <= $2 AND sent_at >= $4` + plainGuard + `
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

// receiveReady leases from a standard queue without message groups, in a
// round. plain is false, and nothing leased, if the round found the queue
// gone or holding messages with a group id (receiveManySQL).
func (s *Store) receiveReady(ctx context.Context, p baton.MessageReceiveParams) (msgs []*baton.Message, plain bool, err error) {
	o := &op{kind: opReceive, queueID: p.QueueID, now: p.Now, max: p.Max, visibleAt: p.VisibleAt, cutoff: p.RetentionCutoff}
	if err := s.group.commit(ctx, o); err != nil {
		return nil, false, err
	}
	return o.leased, !o.notPlain, nil
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
		b.Queue(receiveManySQL, int64(q), now, ends, cutoff, len(owners), nows).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				if raw := rows.RawValues(); raw[len(raw)-1] == nil { // no slot: not a plain queue
					for _, o := range ops {
						o.notPlain = true
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
