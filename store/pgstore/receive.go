package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

// How a receive chooses, and why two servers never lease one message or
// break a FIFO group's order:
//
//   - Every receive leases with UPDATE ... FROM (SELECT ... FOR UPDATE SKIP
//     LOCKED): a message another transaction is leasing is skipped, and one
//     it leased meanwhile fails the re-check of visible_at <= now that
//     PostgreSQL makes on the locked row's newest version.
//   - A FIFO group is locked through its head, the message with the lowest
//     pos in the group. While a receive holds the head's row lock the head
//     cannot be deleted or moved, and no message can come before it (FIFO
//     sends and moves take their pos under the queue row's lock, so pos
//     order is commit order), so any other receive of the group needs the
//     same row lock, or tries a row since deleted: either way it skips the
//     group. The receive takes its locks in one statement and chooses
//     messages in a later one, whose snapshot (READ COMMITTED) sees every
//     lease the group's previous holder committed.

// MessageReceive leases up to p.Max visible messages; see baton.Store.
// A receive from a standard queue runs in a round (receiveReady), which
// reads the queue's kind itself; only a receive from a FIFO queue, one the
// round found not plain, and one of no messages (which must still learn
// whether the queue exists) read the kind first.
func (s *Store) MessageReceive(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	if p.Max > 0 {
		fifo, err := s.isFIFO(ctx, p.QueueID)
		if errors.Is(err, baton.ErrNotFound) {
			return nil, s.queueGone(p.QueueID, err)
		}
		if err != nil {
			return nil, fmt.Errorf("pgstore: receive: %w", err)
		}
		if !fifo {
			var msgs []*baton.Message
			plain := false
			err := s.retry(ctx, func(ctx context.Context) error {
				var err error
				msgs, plain, err = s.receiveReady(ctx, p)
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("pgstore: receive: %w", err)
			}
			if plain {
				return msgs, nil
			}
		}
	}
	return s.receiveByKind(ctx, p)
}

// receiveByKind reads whether the queue is FIFO or holds messages with a
// group id, and receives as its kind asks.
func (s *Store) receiveByKind(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	// group_id > '' rather than <> '': a range of the group index, found in
	// one probe instead of a scan of the queue.
	var kind queueKind
	err := s.retry(ctx, func(ctx context.Context) error {
		v, err := s.reads.do(ctx, fmt.Sprint("kind\x00", p.QueueID), func(ctx context.Context) (any, error) {
			var k queueKind
			err := s.pool.QueryRow(ctx, `
				SELECT q.fifo, EXISTS (SELECT 1 FROM baton_messages m WHERE m.queue_id = q.id AND m.group_id > '')
				FROM baton_queues q WHERE q.id = $1`, int64(p.QueueID)).Scan(&k.fifo, &k.grouped)
			return k, err
		})
		if err == nil {
			kind = v.(queueKind)
		}
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, s.queueGone(p.QueueID, baton.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: receive: %w", err)
	}
	if p.Max <= 0 {
		return nil, nil
	}
	var msgs []*baton.Message
	err = s.retry(ctx, func(ctx context.Context) error {
		var err error
		switch {
		case kind.fifo:
			msgs, err = s.receiveFIFO(ctx, p)
		case kind.grouped:
			msgs, err = s.receiveFair(ctx, p)
		default:
			// The messages with a group id the round found are gone
			// since, or came after the read: the fair receive takes
			// both kinds of queue.
			var plain bool
			if msgs, plain, err = s.receiveReady(ctx, p); err == nil && !plain {
				msgs, err = s.receiveFair(ctx, p)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: receive: %w", err)
	}
	return msgs, nil
}

// queueKind is what a receive reads of its queue first: whether it is a
// FIFO queue, and whether it holds messages with a group id.
type queueKind struct{ fifo, grouped bool }

// Parameters shared by the receive statements: $1 queue id, $2 now, $3 the
// new leases' end, $4 the retention cutoff, $5 Max.

// dropExpired is a CTE, dropped, that deletes (a bounded number of)
// visible messages past retention, which a receive drops instead of
// returning; guard, if not empty, is a further condition on the rows. The
// rows are gathered into an array first and deleted by pos, so that
// whatever the planner estimates the delete is primary-key lookups.
// Messages past retention are a range of baton_messages_by_sent, which
// holds every message; the statement does not say which kind of message,
// as a condition on group_id would let the planner take the visible ones
// from an index of states instead, and read each one's row for its
// sent_at.
func dropExpired(guard string) string {
	return `
	dropped AS (
		DELETE FROM baton_messages WHERE pos = ANY (ARRAY(
			SELECT pos FROM baton_messages
			WHERE queue_id = $1 AND leased IN (false, true) AND visible_at <= $2 AND sent_at < $4` + guard + `
			LIMIT 100 FOR UPDATE SKIP LOCKED))
		RETURNING 1)`
}

// leaseCTE leases the messages of the CTE picked (columns pos and the sort
// keys) and returns them with the sort keys as leased.
func leaseCTE(sortKeys string) string {
	return `
	leased AS (
		UPDATE baton_messages m SET
			receive_count = m.receive_count + 1,
			epoch = m.epoch + 1,
			first_received_at = coalesce(m.first_received_at, $2),
			leased = true,
			leased_at = $2,
			visible_at = $3
		FROM picked p
		WHERE m.pos = p.pos AND m.visible_at <= $2
		RETURNING ` + messageColumns + `, ` + sortKeys + `)`
}

// leasedColumns are messageColumns as the CTE leased names them.
var leasedColumns = fullMessage.selected()

// collectLeased reads the rows of a SELECT of leasedColumns.
func collectLeased(rows pgx.Rows, err error) ([]*baton.Message, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*baton.Message, error) { return scanMessage(row) })
}

// groupsCTE lists the queue's message groups, the empty group id left
// out (a loose index scan of baton_messages_by_group: one index probe per
// group, not one row per message). Statements on the messages of a group
// say that the group id is not empty as well as which group it is: the
// index holds the messages with a group id alone, and the planner cannot
// tell that a group named by a column is not the empty one.
const groupsCTE = `
	groups (group_id) AS (
		(SELECT group_id FROM baton_messages WHERE queue_id = $1 AND group_id > '' ORDER BY group_id LIMIT 1)
		UNION ALL
		SELECT (SELECT x.group_id FROM baton_messages x
			WHERE x.queue_id = $1 AND x.group_id > '' AND x.group_id > g.group_id ORDER BY x.group_id LIMIT 1)
		FROM groups g WHERE g.group_id IS NOT NULL)`

// receiveFair leases from a standard queue with message groups, its
// tenants, by SQS's fair-queue rule (baton.NoisyTenant): the quiet groups
// first, the first visible message of every group, then the second, and so
// on; then the noisy groups, each message from the one with the fewest in
// flight counting those this receive takes. Groups tie in an order drawn
// afresh by each receive, so that over many receives each group comes
// first as often as any other. The messages without a group id are one
// tenant, never noisy, whose messages come in the order a receive from a
// queue without groups takes them (receiveManySQL: the earliest sent
// first, as far as two ranges of baton_messages_by_state tell), the index
// of groups holding none of them. The candidates' rows are looked up by
// pos in an array, so that whatever the planner estimates of the
// candidates it does not read the table for them.
func (s *Store) receiveFair(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	return collectLeased(s.pool.Query(ctx, `
		WITH RECURSIVE `+groupsCTE+`,
		inflight AS (
			SELECT group_id, count(*) AS n FROM baton_messages
			WHERE queue_id = $1 AND group_id > '' AND leased AND visible_at > $2
			GROUP BY group_id
			UNION ALL
			SELECT '', count(*) FROM baton_messages
			WHERE queue_id = $1 AND group_id = '' AND leased AND visible_at > $2),
		tenants AS (
			SELECT g.group_id, coalesce(i.n, 0) AS n,
				coalesce(i.n, 0) >= $7
					AND coalesce(i.n, 0) * $8 > (SELECT coalesce(sum(n), 0) FROM inflight) AS noisy
			FROM groups g LEFT JOIN inflight i ON i.group_id = g.group_id
			WHERE g.group_id IS NOT NULL),
		candidates AS (
			SELECT c.pos, CASE WHEN t.noisy THEN t.n + c.round ELSE c.round END AS round, t.noisy,
				md5(t.group_id || $6) AS tie
			FROM tenants t CROSS JOIN LATERAL (
				SELECT x.pos, row_number() OVER (ORDER BY x.pos) AS round
				FROM baton_messages x
				WHERE x.queue_id = $1 AND x.group_id > '' AND x.group_id = t.group_id
					AND x.visible_at <= $2 AND x.sent_at >= $4
				ORDER BY x.pos
				LIMIT $5) c
			UNION ALL
			SELECT u.pos, row_number() OVER (ORDER BY u.pos), false, md5($6) FROM (
				SELECT pos FROM (
					(SELECT pos FROM baton_messages
					WHERE queue_id = $1 AND group_id = '' AND NOT leased AND visible_at <= $2 AND sent_at >= $4
					ORDER BY visible_at, pos LIMIT $5)
					UNION
					(SELECT pos FROM baton_messages
					WHERE queue_id = $1 AND group_id = '' AND leased AND visible_at <= $2 AND sent_at >= $4
					ORDER BY visible_at, pos LIMIT $5)) v
				ORDER BY pos
				LIMIT $5) u),`+
		dropExpired("")+`,
		picked AS (
			SELECT m.pos, c.noisy, c.round, c.tie FROM baton_messages m JOIN candidates c ON m.pos = c.pos
			WHERE m.pos = ANY (ARRAY(SELECT pos FROM candidates)) AND m.visible_at <= $2
			ORDER BY c.noisy, c.round, c.tie, c.pos
			LIMIT $5
			FOR UPDATE OF m SKIP LOCKED),`+
		leaseCTE(`p.noisy, p.round, p.tie, p.pos`)+`
		SELECT `+leasedColumns+` FROM leased ORDER BY noisy, round, tie, pos`,
		int64(p.QueueID), p.Now, p.VisibleAt, p.RetentionCutoff, p.Max, salt(),
		baton.NoisyTenantInFlight, baton.NoisyTenantShare))
}

// salt is a random string that orders a fair receive's ties.
func salt() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// lockRounds bounds how often a FIFO receive looks for more groups after
// finding some it wanted locked by other receives.
const lockRounds = 3

// receiveFIFO leases from a FIFO queue, group by group: it locks the heads
// of the groups it needs (those whose first visible messages have waited
// longest, as few as cover Max), then takes from each locked group the visible messages before
// its first in-flight one, in send order. A delayed message that was never
// received blocks nothing.
func (s *Store) receiveFIFO(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	var msgs []*baton.Message
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		locked, err := lockGroups(ctx, tx, p)
		if err != nil || len(locked) == 0 {
			return err
		}
		msgs, err = collectLeased(tx.Query(ctx, `
			WITH locked AS (
				SELECT * FROM unnest($6::text[]) WITH ORDINALITY AS l (group_id, ord)
			), scanned AS (
				SELECT l.ord, x.pos, x.visible_at <= $2 AS visible, x.sent_at < $4 AS expired,
					bool_or(x.leased AND x.visible_at > $2) OVER (PARTITION BY l.ord ORDER BY x.pos) AS blocked
				FROM locked l CROSS JOIN LATERAL (
					SELECT pos, leased, visible_at, sent_at FROM baton_messages x
					WHERE x.queue_id = $1 AND x.group_id > '' AND x.group_id = l.group_id
						AND (x.leased OR x.visible_at <= $2)
					ORDER BY x.pos
					LIMIT $7) x
			), picked AS (
				SELECT pos, rank FROM (
					SELECT pos, row_number() OVER (ORDER BY ord, pos) AS rank FROM scanned
					WHERE visible AND NOT blocked AND NOT expired) r
				WHERE rank <= $5
			), dropped AS (
				DELETE FROM baton_messages d USING scanned s
				WHERE d.pos = s.pos AND s.visible AND NOT s.blocked AND s.expired
				RETURNING 1),`+
			leaseCTE(`p.rank`)+`
			SELECT `+leasedColumns+` FROM leased ORDER BY rank`,
			int64(p.QueueID), p.Now, p.VisibleAt, p.RetentionCutoff, p.Max, locked, 2*p.Max+10))
		return err
	})
	return msgs, err
}

// lockGroups locks the heads of the groups a FIFO receive needs and returns
// the groups it locked, in the order to take from them. Groups are needed
// in baton.Store's order (the first visible message that has waited
// longest, then the earlier sent) until their estimated
// receivable messages cover Max; groups locked by other receives are
// skipped, and more looked for, up to lockRounds times.
func lockGroups(ctx context.Context, tx pgx.Tx, p baton.MessageReceiveParams) ([]string, error) {
	var locked []string
	tried := []string{} // not nil: NULL would exclude every group
	got := 0
	for range lockRounds {
		needed, err := neededGroups(ctx, tx, p, p.Max-got, tried)
		if err != nil {
			return nil, err
		}
		if len(needed) == 0 {
			return locked, nil
		}
		heads := make([]int64, len(needed))
		for i, nd := range needed {
			heads[i] = nd.head
			tried = append(tried, nd.group)
		}
		have, err := lockHeads(ctx, tx, heads)
		if err != nil {
			return nil, err
		}
		for _, nd := range needed {
			if have[nd.head] {
				locked = append(locked, nd.group)
				got += nd.n
			}
		}
		if got >= p.Max || len(have) == len(needed) {
			break
		}
	}
	return locked, nil
}

// neededGroup is a group a FIFO receive needs: its head, the message
// with the lowest pos, whose row lock is the group's, and an estimate of
// how many messages the receive can take from it.
type neededGroup struct {
	group string
	head  int64
	n     int
}

// neededGroups returns, in baton.Store's order, the groups not in tried
// that can give messages, as few as their estimates cover want.
func neededGroups(ctx context.Context, tx pgx.Tx, p baton.MessageReceiveParams, want int, tried []string) ([]neededGroup, error) {
	rows, err := tx.Query(ctx, `
		WITH RECURSIVE `+groupsCTE+`,
		-- A group can give messages when its first message that is in
		-- flight or visible, past retention ($5) left out (the receive
		-- drops those), is visible; it then gives at least that one, so
		-- the first $3 such groups are all a receive of $3 can need, and
		-- only they are looked at further. Groups come in baton.Store's
		-- order: the first message that has waited longest (visible_at)
		-- first, then the earlier sent.
		open AS (
			SELECT g.group_id, f.visible_at, f.sent_at, f.sequence_number, f.pos AS first_pos
			FROM groups g
			CROSS JOIN LATERAL (
				SELECT x.pos, x.visible_at, x.sent_at, x.sequence_number FROM baton_messages x
				WHERE x.queue_id = $1 AND x.group_id > '' AND x.group_id = g.group_id
					AND (x.leased AND x.visible_at > $2 OR x.visible_at <= $2 AND x.sent_at >= $5)
				ORDER BY x.pos LIMIT 1) f
			WHERE g.group_id IS NOT NULL AND f.visible_at <= $2 AND NOT (g.group_id = ANY($4))
			ORDER BY f.visible_at, f.sent_at, f.sequence_number, f.pos
			LIMIT $3
		),
		candidates AS (
			SELECT o.group_id, h.pos AS head_pos, o.visible_at, o.sent_at, o.sequence_number, o.first_pos, n.n
			FROM open o
			CROSS JOIN LATERAL (
				SELECT x.pos FROM baton_messages x
				WHERE x.queue_id = $1 AND x.group_id > '' AND x.group_id = o.group_id
				ORDER BY x.pos LIMIT 1) h
			CROSS JOIN LATERAL (
				SELECT count(*) FILTER (WHERE NOT blocked AND NOT expired) AS n FROM (
					SELECT bool_or(y.leased AND y.visible_at > $2) OVER (ORDER BY y.pos) AS blocked,
						y.sent_at < $5 AS expired
					FROM (SELECT x.pos, x.leased, x.visible_at, x.sent_at FROM baton_messages x
						WHERE x.queue_id = $1 AND x.group_id > '' AND x.group_id = o.group_id
							AND (x.leased OR x.visible_at <= $2)
						ORDER BY x.pos LIMIT $3) y) z) n
		)
		SELECT group_id, head_pos, n FROM (
			SELECT c.*, sum(c.n) OVER (
				ORDER BY c.visible_at, c.sent_at, c.sequence_number, c.first_pos ROWS UNBOUNDED PRECEDING) - c.n AS before
			FROM candidates c) s
		WHERE before < $3
		ORDER BY visible_at, sent_at, sequence_number, first_pos`,
		int64(p.QueueID), p.Now, want, tried, p.RetentionCutoff)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (neededGroup, error) {
		var nd neededGroup
		err := row.Scan(&nd.group, &nd.head, &nd.n)
		return nd, err
	})
}

// lockHeads locks the rows of heads that no other transaction holds and
// that still exist, and returns the ones it locked.
func lockHeads(ctx context.Context, tx pgx.Tx, heads []int64) (map[int64]bool, error) {
	// By pos alone: a head moved away meanwhile has a new pos, and a
	// queue_id condition could lead the planner to scan the queue.
	rows, err := tx.Query(ctx, `SELECT pos FROM baton_messages WHERE pos = ANY($1) FOR UPDATE SKIP LOCKED`, heads)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	have := make(map[int64]bool, len(ids))
	for _, id := range ids {
		have[id] = true
	}
	return have, nil
}
