package pgstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

// The statements of a round (group.go). Each takes its rows as arrays, one
// element per row, and acts on all of them at once; their entries are
// numbered (WITH ORDINALITY) so that the answers find their way back.

// insertMessagesSQL stores messages, in array order (which gives them
// their pos, so their send order). Their queues' rows must be locked
// against deletion first: by baton_lock_queues, or FOR NO KEY UPDATE.
const insertMessagesSQL = messageInsert + ` ORDER BY ord`

// sendMessagesSQL is a round's one statement for the sends to standard
// queues: it locks the rows of the queues $21 (distinct) against deletion,
// or fails as the foreign key did when one is gone (baton_lock_queues),
// records the sends' tokens ($19, sent at $20), and stores the messages as
// insertMessagesSQL does. It was three statements; one saves the database
// two statements' fixed costs per round. Within the transaction the order
// of the lock and the inserts does not matter: a queue deleted before the
// lock fails the statement, and so the transaction, inserts and tokens
// alike; one not yet deleted waits for the transaction to commit, and its
// deletion then deletes the messages too.
const sendMessagesSQL = `
	WITH locked AS MATERIALIZED (SELECT baton_lock_queues($21::bigint[])),
	tokens AS (INSERT INTO baton_send_tokens (token, sent_at) SELECT * FROM unnest($19::text[], $20::timestamptz[]))` +
	messageInsert + `, locked ORDER BY ord`

// messageInsert inserts the messages of the arrays $1 to $18
// (messageArrays), numbered ord in array order; a statement adds its order.
const messageInsert = `
	INSERT INTO baton_messages (queue_id, id, group_id, body, attributes, trace_header, dedup_id, sequence_number,
		sender_id, sent_at, dead_letter_source_arn, visible_at, leased, receive_count, first_received_at, epoch, leased_at,
		body_md5)
	SELECT queue_id, id, group_id, body, attributes::jsonb, trace_header, dedup_id, sequence_number,
		sender_id, sent_at, dead_letter_source_arn, visible_at, leased, receive_count, first_received_at, epoch, leased_at,
		body_md5
	FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
		$9::text[], $10::timestamptz[], $11::text[], $12::timestamptz[], $13::boolean[], $14::integer[], $15::timestamptz[],
		$16::bigint[], $17::timestamptz[], $18::text[]) WITH ORDINALITY
		AS t (queue_id, id, group_id, body, attributes, trace_header, dedup_id, sequence_number,
			sender_id, sent_at, dead_letter_source_arn, visible_at, leased, receive_count, first_received_at, epoch, leased_at,
			body_md5, ord)`

// Deletes and visibility changes lock each message's row, judge the
// receipt's lease on the row as it is once locked, and act, all in one
// statement: two holders of one receipt cannot both find the lease live.
// A statement names each message at most once (layers), and locks the rows
// in the order of its arrays, which are sorted, so that two rounds lock
// their rows in one order.

// leaseCurrentCTE locks the messages named by the req CTE (columns r_queue,
// r_id, r_epoch, r_now) and says whether each receipt's lease is live; it
// keeps each message's columns of shape.
func leaseCurrentCTE(shape messageShape) string {
	return `
	cur AS (
		SELECT r.*, m.pos, ` + shape.columns + `,
			(m.epoch = r.r_epoch AND m.leased AND m.visible_at > r.r_now) AS live
		FROM req r JOIN baton_messages m ON m.queue_id = r.r_queue AND m.id = r.r_id
		FOR UPDATE OF m)`
}

// leaseStatement is a lease statement (deleteMany or changeMany) in each
// shape: a batch's outcomes need not carry the messages' payload
// (baton.Store), which is most of what the statement would send back.
type leaseStatement struct {
	full, lean string
}

func newLeaseStatement(of func(messageShape) string) leaseStatement {
	return leaseStatement{full: of(fullMessage), lean: of(leaseState)}
}

// sql is the statement for layer: with the payload if an op of the layer
// wants it.
func (st leaseStatement) sql(layer []entryRef) (string, messageShape) {
	for _, r := range layer {
		if r.o.payload {
			return st.full, fullMessage
		}
	}
	return st.lean, leaseState
}

// deleteManySQL deletes, for each entry, its message if the receipt's
// lease is live, or in any case unless its require_live, and returns each
// message found as it was (the shape's columns), whether the lease was
// live, whether it deleted, and the entry's number.
var deleteManySQL = newLeaseStatement(func(shape messageShape) string {
	return `
	WITH req AS (
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::timestamptz[], $5::boolean[]) WITH ORDINALITY
			AS r (r_queue, r_id, r_epoch, r_now, r_require_live, ord)),` +
		leaseCurrentCTE(shape) + `,
	del AS (
		DELETE FROM baton_messages d USING cur
		WHERE d.pos = cur.pos AND (cur.live OR NOT cur.r_require_live)
		RETURNING d.pos)
	SELECT ` + shape.selected() + `, live, pos IN (SELECT pos FROM del), false, ord FROM cur`
})

// changeManySQL moves, for each entry, the end of its message's lease to
// its r_visible_at if the receipt's lease is live, or if r_any_lease and a
// later lease is (taking back the receive of a live one if r_unreceive:
// a rerun finds it released, not live, and takes nothing more), and returns each message found as it was, whether the
// receipt's lease was live, whether the change took effect, whether it
// released the message (made it visible at once), and the entry's number.
var changeManySQL = newLeaseStatement(func(shape messageShape) string {
	return `
	WITH req AS (
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::timestamptz[], $5::timestamptz[], $6::boolean[],
			$7::boolean[])
			WITH ORDINALITY AS r (r_queue, r_id, r_epoch, r_now, r_visible_at, r_any_lease, r_unreceive, ord)),` +
		leaseCurrentCTE(shape) + `,
	upd AS (
		UPDATE baton_messages u SET visible_at = cur.r_visible_at,
			receive_count = greatest(u.receive_count - (cur.r_unreceive AND cur.live)::int, 0)
		FROM cur
		WHERE u.pos = cur.pos
			AND (cur.live OR cur.r_any_lease AND cur.epoch > cur.r_epoch AND cur.leased AND cur.visible_at > cur.r_now)
		RETURNING u.pos)
	SELECT ` + shape.selected() + `, live, pos IN (SELECT pos FROM upd), pos IN (SELECT pos FROM upd) AND r_visible_at <= r_now, ord
	FROM cur`
})

// entryRef is one entry of an op in a round.
type entryRef struct {
	o *op
	i int
}

// commitRound runs ops in one transaction and one round trip (a pipeline
// of statements ended by one Sync is one implicit transaction) and sets
// their results: the standard queues' messages and the sends' tokens in
// one statement that locks their queues' rows (a round with a send to a
// deleted queue fails as the foreign key made it fail:
// isForeignKeyViolation), then the deletes and the changes in a statement
// or a few each, then the receives, a statement per queue. Whether the
// queue of a delete or change exists is left to lease, which asks only
// when none of the op's messages was found.
func (s *Store) commitRound(ctx context.Context, ops []*op) error {
	return s.pool.SendBatch(ctx, s.roundBatch(ops)).Close()
}

// roundBatch is commitRound's statements for ops, each with the reading of
// its rows into the ops' results.
func (s *Store) roundBatch(ops []*op) *pgx.Batch {
	b := &pgx.Batch{}
	var (
		msgs          []*baton.Message
		msgQueues     []int64 // of msgs
		deletes, chgs []entryRef
		receives      []*op
	)
	for _, o := range ops {
		switch o.kind {
		case opReceive:
			o.leased, o.notPlain = nil, false
			receives = append(receives, o)
			continue
		case opSend:
			msgs = append(msgs, o.msgs...)
			for range o.msgs {
				msgQueues = append(msgQueues, int64(o.queueID))
			}
			continue
		case opDelete:
			deletes = appendRefs(deletes, o)
		case opChange:
			chgs = appendRefs(chgs, o)
		}
		o.rows = make([]leaseRow, len(o.entries))
	}
	if len(msgs) > 0 {
		tokens, at := sendTokens(ops)
		b.Queue(sendMessagesSQL, append(messageArrays(msgQueues, msgs), tokens, at, distinctSorted(msgQueues))...)
		if s.tokensPruneDue(at[0]) {
			b.Queue(`DELETE FROM baton_send_tokens WHERE sent_at < $1`, at[0].Add(-sendTokenTTL))
		}
	}
	for _, layer := range layers(deletes) {
		requireLive := make([]bool, len(layer))
		for j, r := range layer {
			requireLive[j] = r.o.requireLive
		}
		queueLease(b, deleteManySQL, layer, requireLive)
	}
	for _, layer := range layers(chgs) {
		ends, anyLease, unreceive := make([]time.Time, len(layer)), make([]bool, len(layer)), make([]bool, len(layer))
		for j, r := range layer {
			ends[j], anyLease[j], unreceive[j] = r.o.entries[r.i].VisibleAt, r.o.anyLease, r.o.unreceive
		}
		queueLease(b, changeManySQL, layer, ends, anyLease, unreceive)
	}
	queueReceives(b, receives)
	return b
}

// distinctSorted returns the distinct values of ids, in ascending order.
func distinctSorted(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// appendRefs appends o's entries to refs.
func appendRefs(refs []entryRef, o *op) []entryRef {
	for i := range o.entries {
		refs = append(refs, entryRef{o, i})
	}
	return refs
}

// layers sorts refs by queue and message id and splits them into the
// statements to run one after the other, each naming a message once: the
// k-th entry for a message goes to the k-th, so a message's entries keep
// their order (that of ops, then of entries).
func layers(refs []entryRef) [][]entryRef {
	if len(refs) == 0 {
		return nil
	}
	slices.SortStableFunc(refs, func(a, b entryRef) int {
		return cmp.Or(cmp.Compare(a.o.queueID, b.o.queueID),
			cmp.Compare(a.o.entries[a.i].MessageID, b.o.entries[b.i].MessageID))
	})
	var out [][]entryRef
	k := 0
	for j, r := range refs {
		if j > 0 && r.o.queueID == refs[j-1].o.queueID && r.o.entries[r.i].MessageID == refs[j-1].o.entries[refs[j-1].i].MessageID {
			k++
		} else {
			k = 0
		}
		if k == len(out) {
			out = append(out, nil)
		}
		out[k] = append(out[k], r)
	}
	return out
}

// queueLease queues a lease statement (deleteManySQL or changeManySQL) over
// the entries of layer, whose arrays are queue, message id, epoch and now,
// then extra, and has its rows read into the entries' results.
func queueLease(b *pgx.Batch, st leaseStatement, layer []entryRef, extra ...any) {
	sql, shape := st.sql(layer)
	n := len(layer)
	queues, ids, epochs, nows := make([]int64, n), make([]string, n), make([]int64, n), make([]time.Time, n)
	for j, r := range layer {
		en := r.o.entries[r.i]
		queues[j], ids[j], epochs[j], nows[j] = int64(r.o.queueID), en.MessageID, int64(en.Epoch), r.o.now
	}
	b.Queue(sql, append([]any{queues, ids, epochs, nows}, extra...)...).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			var row leaseRow
			var ord int64
			m, err := shape.scan(rows, &row.live, &row.changed, &row.released, &ord)
			if err != nil {
				return err
			}
			row.msg = m
			r := layer[ord-1]
			r.o.rows[r.i] = row
		}
		return rows.Err()
	})
}

// messageArrays are the arguments of insertMessagesSQL for msgs, each of
// the queue at the same index of queues.
func messageArrays(queues []int64, msgs []*baton.Message) []any {
	n := len(msgs)
	text := func() []string { return make([]string, n) }
	ids, groups, bodies, traces, dedups, seqs, senders, dlsrc, md5s := text(), text(), text(), text(), text(), text(), text(), text(), text()
	attrs := make([]*string, n)
	sent, visible := make([]time.Time, n), make([]time.Time, n)
	firstRecv, leasedAt := make([]*time.Time, n), make([]*time.Time, n)
	leased, counts, epochs := make([]bool, n), make([]int32, n), make([]int64, n)
	for i, m := range msgs {
		ids[i], groups[i], bodies[i], traces[i], dedups[i], seqs[i] = m.ID, m.GroupID, m.Body, m.TraceHeader, m.DedupID, m.SequenceNumber
		senders[i], dlsrc[i], md5s[i] = m.SenderID, m.DeadLetterSourceARN, m.BodyMD5
		if a := encodeMessageAttributes(m.Attributes); a != nil {
			s := string(a)
			attrs[i] = &s
		}
		sent[i], visible[i], leased[i], counts[i], epochs[i] = m.SentAt, m.VisibleAt, m.Leased, int32(m.ReceiveCount), int64(m.Epoch)
		firstRecv[i], leasedAt[i] = timePtr(m.FirstReceivedAt), timePtr(m.LeasedAt)
	}
	return []any{queues, ids, groups, bodies, attrs, traces, dedups, seqs, senders, sent, dlsrc, visible, leased, counts,
		firstRecv, epochs, leasedAt, md5s}
}

// timePtr is &t, or nil (NULL) for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// sendTokens returns a token for each send of ops (sendToken), and the time
// each was sent.
func sendTokens(ops []*op) (tokens []string, at []time.Time) {
	for _, o := range ops {
		if o.kind == opSend && len(o.msgs) > 0 {
			tokens, at = append(tokens, sendToken(o.queueID, o.msgs)), append(at, o.msgs[0].SentAt)
		}
	}
	return tokens, at
}
