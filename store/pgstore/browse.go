package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-sqs/baton"
)

// browseSQL lists a page of a queue's messages in browse order, oldest
// first: $1 queue id, $2 and $3 the cursor's sent_at and id (NULL from the
// start), $4 the states as bits, $5 now, $6 the body's substring (empty for
// any), $7 the limit. The range on sent_at is one of
// baton_messages_by_sent; the row comparison then skips the cursor's own
// instant's earlier ids.
var browseSQL = `
	SELECT ` + messageColumns + ` FROM baton_messages m
	WHERE m.queue_id = $1
	  AND ($2::timestamptz IS NULL OR m.sent_at >= $2 AND (m.sent_at, m.id) > ($2, $3::text COLLATE "C"))
	  AND (($4::int & 1 <> 0 AND m.visible_at <= $5)
	    OR ($4::int & 2 <> 0 AND m.visible_at > $5 AND m.leased)
	    OR ($4::int & 4 <> 0 AND m.visible_at > $5 AND NOT m.leased))
	  AND ($6::text = '' OR strpos(m.body, $6::text) > 0)
	ORDER BY m.sent_at, m.id
	LIMIT $7`

// browseNewestSQL is browseSQL newest first.
var browseNewestSQL = strings.NewReplacer(
	"m.sent_at >= $2", "m.sent_at <= $2",
	"(m.sent_at, m.id) >", "(m.sent_at, m.id) <",
	"ORDER BY m.sent_at, m.id", "ORDER BY m.sent_at DESC, m.id DESC",
).Replace(browseSQL)

// MessageBrowse lists a page of the queue's messages without changing
// them; see baton.Store.
func (s *Store) MessageBrowse(ctx context.Context, p baton.MessageBrowseParams) (baton.MessageBrowsePage, error) {
	var after *baton.BrowseKey
	if p.Cursor != "" {
		k, err := baton.ParseCursor(p.Cursor)
		if err != nil {
			return baton.MessageBrowsePage{}, err
		}
		after = &k
	}
	if err := s.queueExists(ctx, p.QueueID); err != nil {
		return baton.MessageBrowsePage{}, storeErr(err, "browse")
	}
	// A text column holds valid UTF-8 without NUL only: no body holds
	// another substring.
	if p.Limit <= 0 || p.BodyContains != "" && (!utf8.ValidString(p.BodyContains) || strings.IndexByte(p.BodyContains, 0) >= 0) {
		return baton.MessageBrowsePage{}, nil
	}
	states := p.States
	if states == 0 {
		states = baton.AllStates
	}
	var sentAt *time.Time
	var id *string
	if after != nil {
		sentAt, id = &after.SentAt, &after.ID
	}
	q := browseSQL
	if p.Newest {
		q = browseNewestSQL
	}
	var msgs []*baton.Message
	err := s.retry(ctx, func(ctx context.Context) error {
		var err error
		msgs, err = collectLeased(s.pool.Query(ctx, q, int64(p.QueueID), sentAt, id, int(states), p.Now, p.BodyContains, p.Limit+1))
		return err
	})
	if err != nil {
		return baton.MessageBrowsePage{}, fmt.Errorf("pgstore: browse: %w", err)
	}
	var page baton.MessageBrowsePage
	if len(msgs) > p.Limit {
		msgs = msgs[:p.Limit]
		page.Next = baton.KeyOf(msgs[len(msgs)-1]).Cursor()
	}
	page.Messages = msgs
	return page, nil
}

// inFlightSQL lists every queue's messages in flight at $1, at most $2 of
// a queue, those whose lease ends first: one probe of each index of states
// (byStates) a queue, in one statement.
var inFlightSQL = `
	SELECT ` + leaseStateColumns + `, q.id FROM baton_queues q
	CROSS JOIN LATERAL (
		SELECT * FROM (` + byStates(`
			(SELECT * FROM baton_messages x
			WHERE x.queue_id = q.id AND x.%s AND x.leased AND x.visible_at > $1
			ORDER BY x.visible_at LIMIT $2)`, `
			UNION ALL`) + `) u
		ORDER BY u.visible_at LIMIT $2) m`

// MessagesInFlight lists every queue's messages in flight at now, at most
// perQueue of a queue, in one statement; see baton.InFlightLister.
func (s *Store) MessagesInFlight(ctx context.Context, now time.Time, perQueue int) (map[uint64][]*baton.Message, error) {
	out := map[uint64][]*baton.Message{}
	if perQueue <= 0 {
		return out, nil
	}
	err := s.retry(ctx, func(ctx context.Context) error {
		clear(out)
		rows, err := s.pool.Query(ctx, inFlightSQL, now, perQueue)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var queueID int64
			m, err := scanLeaseState(rows, &queueID)
			if err != nil {
				return err
			}
			out[uint64(queueID)] = append(out[uint64(queueID)], m)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: list the messages in flight: %w", err)
	}
	return out, nil
}
