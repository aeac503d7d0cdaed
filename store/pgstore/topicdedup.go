package pgstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

// TopicDedupGet returns the record of key made after cutoff, or
// baton.ErrNotFound.
func (s *Store) TopicDedupGet(ctx context.Context, region, account, topic, key string, cutoff time.Time) (*baton.PublishRecord, error) {
	var r *baton.PublishRecord
	err := s.retry(ctx, func(ctx context.Context) error {
		var err error
		r, err = scanPublishRecord(s.pool.QueryRow(ctx, `SELECT key, message_id, sequence_number, at FROM baton_topic_publishes
			WHERE region = $1 AND account = $2 AND topic = $3 AND key = $4 AND at > $5`, region, account, topic, key, cutoff))
		return err
	})
	return r, storeErr(err, "get publish record")
}

// TopicDedupPut records r in one transaction, which first deletes the
// topic's expired records: the topic's row is locked (KEY SHARE) so that
// a concurrent delete of the topic waits for it or is seen, and a
// concurrent record of the same key is waited for by the insert and then
// read.
func (s *Store) TopicDedupPut(ctx context.Context, region, account, topic string, r *baton.PublishRecord, cutoff time.Time) (*baton.PublishRecord, error) {
	var old *baton.PublishRecord
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		old = nil
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM baton_topics WHERE region = $1 AND account = $2 AND name = $3 FOR KEY SHARE`,
			region, account, topic).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return baton.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM baton_topic_publishes WHERE region = $1 AND account = $2 AND topic = $3 AND at <= $4`,
			region, account, topic, cutoff); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO baton_topic_publishes (region, account, topic, key, message_id, sequence_number, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
			region, account, topic, r.Key, r.MessageID, r.SequenceNumber, r.At)
		if err != nil || tag.RowsAffected() == 1 {
			return err
		}
		old, err = scanPublishRecord(tx.QueryRow(ctx, `SELECT key, message_id, sequence_number, at FROM baton_topic_publishes
			WHERE region = $1 AND account = $2 AND topic = $3 AND key = $4`, region, account, topic, r.Key))
		return err
	})
	if err == nil && old != nil {
		err = baton.ErrExists
	}
	return old, storeErr(err, "put publish record")
}

func scanPublishRecord(row pgx.Row) (*baton.PublishRecord, error) {
	var r baton.PublishRecord
	if err := row.Scan(&r.Key, &r.MessageID, &r.SequenceNumber, &r.At); err != nil {
		return nil, err
	}
	return &r, nil
}

// TopicSequenceNext hands out the topic's next SequenceNumber from its
// row, in one statement: a concurrent number waits for the row.
func (s *Store) TopicSequenceNext(ctx context.Context, region, account, topic string, atLeast uint64) (uint64, error) {
	var n uint64
	err := s.retryWrite(ctx, func(ctx context.Context) error {
		var text string
		err := s.pool.QueryRow(ctx, `UPDATE baton_topics SET last_sequence = GREATEST($4::numeric, last_sequence + 1)
			WHERE region = $1 AND account = $2 AND name = $3 RETURNING last_sequence::text`,
			region, account, topic, strconv.FormatUint(atLeast, 10)).Scan(&text)
		if errors.Is(err, pgx.ErrNoRows) {
			return baton.ErrNotFound
		}
		if err != nil {
			return err
		}
		n, err = strconv.ParseUint(text, 10, 64)
		return err
	}, nil)
	return n, storeErr(err, "number a publish")
}
