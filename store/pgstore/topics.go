package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

var _ baton.TopicStore = (*Store)(nil)

// TopicCreate stores a new topic; baton.ErrExists if its name is taken.
func (s *Store) TopicCreate(ctx context.Context, t *baton.Topic) error {
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO baton_topics (region, account, name, attributes, tags, created_at)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
			t.Region, t.Account, t.Name, encodeTags(t.Attributes), encodeTags(t.Tags), nullTime(t.CreatedAt))
		if err == nil && tag.RowsAffected() == 0 {
			err = baton.ErrExists
		}
		return err
	})
	return storeErr(err, "create topic")
}

// TopicGet returns the topic or baton.ErrNotFound.
func (s *Store) TopicGet(ctx context.Context, region, account, name string) (*baton.Topic, error) {
	var t *baton.Topic
	err := s.retry(ctx, func(ctx context.Context) error {
		var err error
		t, err = scanTopic(s.pool.QueryRow(ctx, `SELECT region, account, name, attributes, tags, created_at FROM baton_topics
			WHERE region = $1 AND account = $2 AND name = $3`, region, account, name))
		return err
	})
	return t, storeErr(err, "get topic")
}

// TopicList returns topics in byte-wise (region, name) order.
func (s *Store) TopicList(ctx context.Context, p baton.TopicListParams) ([]*baton.Topic, error) {
	var ts []*baton.Topic
	err := s.retry(ctx, func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT region, account, name, attributes, tags, created_at FROM baton_topics
			WHERE ($1 = '' OR region = $1) AND account = $2 AND name > $3 ORDER BY region, name LIMIT $4`, p.Region, p.Account, p.After, limitOf(p.Limit))
		if err != nil {
			return err
		}
		ts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*baton.Topic, error) { return scanTopic(r) })
		return err
	})
	return ts, storeErr(err, "list topics")
}

// TopicUpdate replaces the topic's attributes and tags.
func (s *Store) TopicUpdate(ctx context.Context, t *baton.Topic) error {
	return storeErr(s.exec(ctx, `UPDATE baton_topics SET attributes = $4, tags = $5 WHERE region = $1 AND account = $2 AND name = $3`,
		t.Region, t.Account, t.Name, encodeTags(t.Attributes), encodeTags(t.Tags)), "update topic")
}

// TopicDelete deletes the topic; its subscriptions go with it (ON DELETE
// CASCADE).
func (s *Store) TopicDelete(ctx context.Context, region, account, name string) error {
	return storeErr(s.exec(ctx, `DELETE FROM baton_topics WHERE region = $1 AND account = $2 AND name = $3`,
		region, account, name), "delete topic")
}

// SubscriptionCreate stores a subscription of an existing topic. The
// topic's row is locked (KEY SHARE) first, so that a concurrent delete of
// the topic waits for it or is seen.
func (s *Store) SubscriptionCreate(ctx context.Context, sub *baton.Subscription) error {
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM baton_topics WHERE region = $1 AND account = $2 AND name = $3 FOR KEY SHARE`,
			sub.Region, sub.Account, sub.Topic).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return baton.ErrNotFound
		}
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO baton_subscriptions (region, account, topic, id, protocol, endpoint, owner, principal, pending, attributes, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`,
			sub.Region, sub.Account, sub.Topic, sub.ID, sub.Protocol, sub.Endpoint, sub.Owner, sub.Principal, sub.Pending,
			encodeTags(sub.Attributes), nullTime(sub.CreatedAt))
		if err == nil && tag.RowsAffected() == 0 {
			err = baton.ErrExists
		}
		return err
	})
	return storeErr(err, "create subscription")
}

const subscriptionColumns = `region, account, topic, id, protocol, endpoint, owner, principal, pending, attributes, created_at`

// SubscriptionGet returns the subscription or baton.ErrNotFound.
func (s *Store) SubscriptionGet(ctx context.Context, region, account, topic, id string) (*baton.Subscription, error) {
	var sub *baton.Subscription
	err := s.retry(ctx, func(ctx context.Context) error {
		var err error
		sub, err = scanSubscription(s.pool.QueryRow(ctx, `SELECT `+subscriptionColumns+` FROM baton_subscriptions
			WHERE region = $1 AND account = $2 AND topic = $3 AND id = $4`, region, account, topic, id))
		return err
	})
	return sub, storeErr(err, "get subscription")
}

// SubscriptionList returns subscriptions in byte-wise (topic, id) order.
func (s *Store) SubscriptionList(ctx context.Context, p baton.SubscriptionListParams) ([]*baton.Subscription, error) {
	var subs []*baton.Subscription
	err := s.retry(ctx, func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT `+subscriptionColumns+` FROM baton_subscriptions
			WHERE region = $1 AND account = $2 AND ($3 = '' OR topic = $3) AND ($4 = '' OR (topic, id) > ($4, $5))
			ORDER BY topic, id LIMIT $6`, p.Region, p.Account, p.Topic, p.AfterTopic, p.AfterID, limitOf(p.Limit))
		if err != nil {
			return err
		}
		subs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*baton.Subscription, error) { return scanSubscription(r) })
		return err
	})
	return subs, storeErr(err, "list subscriptions")
}

// SubscriptionUpdate replaces the subscription's Pending and Attributes.
func (s *Store) SubscriptionUpdate(ctx context.Context, sub *baton.Subscription) error {
	return storeErr(s.exec(ctx, `UPDATE baton_subscriptions SET pending = $5, attributes = $6
		WHERE region = $1 AND account = $2 AND topic = $3 AND id = $4`,
		sub.Region, sub.Account, sub.Topic, sub.ID, sub.Pending, encodeTags(sub.Attributes)), "update subscription")
}

// SubscriptionDelete deletes the subscription.
func (s *Store) SubscriptionDelete(ctx context.Context, region, account, topic, id string) error {
	return storeErr(s.exec(ctx, `DELETE FROM baton_subscriptions WHERE region = $1 AND account = $2 AND topic = $3 AND id = $4`,
		region, account, topic, id), "delete subscription")
}

// exec runs one statement that must change a row; baton.ErrNotFound if
// it changed none.
func (s *Store) exec(ctx context.Context, sql string, args ...any) error {
	return s.retryWrite(ctx, func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, sql, args...)
		if err == nil && tag.RowsAffected() == 0 {
			return baton.ErrNotFound
		}
		return err
	}, nil)
}

// limitOf is a LIMIT: NULL (none) for 0.
func limitOf(n int) any {
	if n <= 0 {
		return nil
	}
	return n
}

// storeErr passes the store's own errors on (ErrNotFound, ErrExists; no
// row read is ErrNotFound) and wraps the others with the operation's name.
func storeErr(err error, what string) error {
	switch {
	case err == nil, errors.Is(err, baton.ErrExists), errors.Is(err, baton.ErrNotFound):
		return err
	case errors.Is(err, pgx.ErrNoRows):
		return baton.ErrNotFound
	}
	return fmt.Errorf("pgstore: %s: %w", what, err)
}

func scanTopic(row pgx.Row) (*baton.Topic, error) {
	var (
		t           baton.Topic
		attrs, tags []byte
		created     *time.Time
	)
	if err := row.Scan(&t.Region, &t.Account, &t.Name, &attrs, &tags, &created); err != nil {
		return nil, err
	}
	var err error
	if t.Attributes, err = decodeTags(attrs); err != nil {
		return nil, err
	}
	if t.Tags, err = decodeTags(tags); err != nil {
		return nil, err
	}
	t.CreatedAt = timeOf(created)
	return &t, nil
}

func scanSubscription(row pgx.Row) (*baton.Subscription, error) {
	var (
		sub     baton.Subscription
		attrs   []byte
		created *time.Time
	)
	if err := row.Scan(&sub.Region, &sub.Account, &sub.Topic, &sub.ID, &sub.Protocol, &sub.Endpoint, &sub.Owner, &sub.Principal,
		&sub.Pending, &attrs, &created); err != nil {
		return nil, err
	}
	var err error
	if sub.Attributes, err = decodeTags(attrs); err != nil {
		return nil, err
	}
	sub.CreatedAt = timeOf(created)
	return &sub, nil
}

// SigningKey returns the database's signing key: the first stored, by this
// node or another.
func (s *Store) SigningKey(ctx context.Context, generate func() ([]byte, error)) ([]byte, error) {
	var key []byte
	read := func() error {
		return s.retry(ctx, func(ctx context.Context) error {
			return s.pool.QueryRow(ctx, `SELECT key FROM baton_sns_signing_key WHERE id = 1`).Scan(&key)
		})
	}
	err := read()
	if errors.Is(err, pgx.ErrNoRows) {
		var made []byte
		if made, err = generate(); err != nil {
			return nil, err
		}
		err = s.retry(ctx, func(ctx context.Context) error {
			_, err := s.pool.Exec(ctx, `INSERT INTO baton_sns_signing_key (id, key) VALUES (1, $1) ON CONFLICT DO NOTHING`, made)
			return err
		})
		if err == nil {
			err = read() // another node's, if it stored one first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: signing key: %w", err)
	}
	return key, nil
}
