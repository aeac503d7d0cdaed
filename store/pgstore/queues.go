package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
)

// QueueCreate stores a new queue. The insert comes before the check of
// recent deletions: it waits for a concurrent delete of the name to commit,
// and the check, a later statement, then sees that delete.
func (s *Store) QueueCreate(ctx context.Context, p baton.QueueCreateParams) error {
	q := p.Queue
	key := queueKey(q.Region, q.Account, q.Name)
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO baton_queues (id, account, name, attributes, tags, created_at, modified_at, purged_at, dedup_scope, fifo, region)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT DO NOTHING`,
			int64(q.ID), q.Account, q.Name, encodeQueueAttributes(q.Attributes), encodeTags(q.Tags),
			q.CreatedAt, q.ModifiedAt, nullTime(q.PurgedAt), q.DedupScope, q.IsFIFO(), q.Region)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return baton.ErrExists
		}
		var recent bool
		err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM baton_deleted_queues WHERE account = $1 AND name = $2 AND deleted_at > $3 AND region = $4)`,
			q.Account, q.Name, p.DeletedCutoff, q.Region).Scan(&recent)
		if err != nil {
			return err
		}
		if recent {
			return baton.ErrDeletedRecently
		}
		return s.notifyQueueChange(ctx, tx, key)
	})
	s.queues.drop(key)
	if err != nil && !errors.Is(err, baton.ErrExists) && !errors.Is(err, baton.ErrDeletedRecently) {
		return fmt.Errorf("pgstore: create queue: %w", err)
	}
	return err
}

// QueueGet returns the queue or baton.ErrNotFound: the row kept a moment
// unless ctx is marked by baton.Fresh (queuecache.go), or else the row
// read, by a read shared with concurrent calls (reads.go).
func (s *Store) QueueGet(ctx context.Context, region, account, name string) (*baton.Queue, error) {
	key := queueKey(region, account, name)
	if !baton.IsFresh(ctx) {
		if q, ok := s.queues.get(key); ok {
			return q, nil
		}
	}
	var q *baton.Queue
	err := s.retry(ctx, func(ctx context.Context) error {
		v, err := s.reads.do(ctx, "queue\x00"+key, func(ctx context.Context) (any, error) {
			gen := s.queues.generation()
			row, err := scanQueue(s.pool.QueryRow(ctx, `SELECT `+queueColumns+` FROM baton_queues q WHERE q.region = $1 AND q.account = $2 AND q.name = $3`,
				region, account, name))
			if err == nil {
				s.queues.put(key, row, gen)
			}
			return row, err
		})
		if err == nil {
			// The read is shared: each caller gets a copy.
			q = copyQueue(v.(*baton.Queue))
		}
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, baton.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: get queue: %w", err)
	}
	return q, nil
}

// notifyQueueChange tells the other servers, once tx commits, that the
// queue under key changed, so that they drop the row they keep
// (queuecache.go). PostgreSQL takes its notification lock as tx commits
// and holds it through the commit's flush, so other notifiers (the waker,
// the lease ledger) may wait for one flush: a change to a queue is rare.
func (s *Store) notifyQueueChange(ctx context.Context, tx pgx.Tx, key string) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, queueChannel, queueChange(s.origin, key))
	return err
}

// QueueList compares names byte-wise (the columns are COLLATE "C"), so its
// order and paging agree with the other stores whatever the database's
// collation.
func (s *Store) QueueList(ctx context.Context, p baton.QueueListParams) ([]*baton.Queue, error) {
	var limit any // NULL: no limit
	if p.Limit > 0 {
		limit = p.Limit
	}
	var out []*baton.Queue
	err := s.retry(ctx, func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, `
		SELECT `+queueColumns+` FROM baton_queues q
		WHERE ($1 = '' OR q.account = $1) AND starts_with(q.name, $2) AND q.name > $3 AND ($5 = '' OR q.region = $5)
		ORDER BY q.name, q.account, q.region
		LIMIT $4`,
			p.Account, p.Prefix, p.After, limit, p.Region)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*baton.Queue, error) { return scanQueue(row) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: list queues: %w", err)
	}
	return out, nil
}

// QueueUpdate changes the queue under its row's lock, so concurrent tag
// changes on several servers do not lose each other's keys.
func (s *Store) QueueUpdate(ctx context.Context, p baton.QueueUpdateParams) (*baton.Queue, error) {
	var q *baton.Queue
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		q, err = scanQueue(tx.QueryRow(ctx, `SELECT `+queueColumns+` FROM baton_queues q WHERE q.region = $1 AND q.account = $2 AND q.name = $3 FOR NO KEY UPDATE`,
			p.Region, p.Account, p.Name))
		if err != nil {
			return err
		}
		if p.Attributes != nil {
			q.Attributes = *p.Attributes
		}
		// The row is locked: another update's tags wait for this one's.
		if q.Tags, err = p.Tags(q.Tags); err != nil {
			return err
		}
		if !p.ModifiedAt.IsZero() {
			q.ModifiedAt = p.ModifiedAt
		}
		_, err = tx.Exec(ctx, `UPDATE baton_queues SET attributes = $2, tags = $3, modified_at = $4 WHERE id = $1`,
			int64(q.ID), encodeQueueAttributes(q.Attributes), encodeTags(q.Tags), q.ModifiedAt)
		if err != nil {
			return err
		}
		return s.notifyQueueChange(ctx, tx, queueKey(p.Region, p.Account, p.Name))
	})
	s.queues.drop(queueKey(p.Region, p.Account, p.Name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, baton.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: update queue: %w", err)
	}
	return q, nil
}

// QueueDelete deletes the queue, and its messages and deduplication keys
// with it. Deleting the queue's row waits for the sends that locked it
// (baton_lock_queues) to commit, so the messages deleted after include
// theirs, and later sends find no queue. A rerun that finds the queue gone
// after a lost COMMIT answer finds it deleted by the run before.
func (s *Store) QueueDelete(ctx context.Context, region, account, name string, now time.Time) error {
	gone := func(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
	err := s.inTxDone(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `DELETE FROM baton_queues WHERE region = $1 AND account = $2 AND name = $3 RETURNING id`,
			region, account, name).Scan(&id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM baton_messages WHERE queue_id = $1`, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO baton_deleted_queues (region, account, name, deleted_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (region, account, name) DO UPDATE SET deleted_at = greatest(baton_deleted_queues.deleted_at, excluded.deleted_at)`,
			region, account, name, now)
		if err != nil {
			return err
		}
		return s.notifyQueueChange(ctx, tx, queueKey(region, account, name))
	}, gone)
	s.queues.drop(queueKey(region, account, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return baton.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("pgstore: delete queue: %w", err)
	}
	return nil
}

// QueuePurge deletes the queue's messages and deduplication keys, keeping
// its sequence numbers growing. A rerun that finds the queue purged at
// p.Now after a lost COMMIT answer finds the run before's purge.
func (s *Store) QueuePurge(ctx context.Context, p baton.QueuePurgeParams) error {
	var purgedAt *time.Time
	ours := func(err error) bool {
		return errors.Is(err, baton.ErrPurgedRecently) && purgedAt != nil && purgedAt.Sub(p.Now).Abs() < time.Microsecond
	}
	err := s.inTxDone(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var id int64
		var purged bool
		err := tx.QueryRow(ctx, `
			WITH q AS (
				SELECT id, purged_at FROM baton_queues WHERE account = $1 AND name = $2 AND region = $5 FOR NO KEY UPDATE
			), upd AS (
				UPDATE baton_queues u SET purged_at = $3 FROM q
				WHERE u.id = q.id AND (q.purged_at IS NULL OR q.purged_at <= $4)
				RETURNING u.id)
			SELECT q.id, EXISTS (SELECT 1 FROM upd), q.purged_at FROM q`,
			p.Account, p.Name, p.Now, p.PurgedCutoff, p.Region).Scan(&id, &purged, &purgedAt)
		if err != nil {
			return err
		}
		if !purged {
			return baton.ErrPurgedRecently
		}
		if _, err := tx.Exec(ctx, `DELETE FROM baton_messages WHERE queue_id = $1`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM baton_dedup WHERE queue_id = $1`, id); err != nil {
			return err
		}
		return s.notifyQueueChange(ctx, tx, queueKey(p.Region, p.Account, p.Name))
	}, ours)
	s.queues.drop(queueKey(p.Region, p.Account, p.Name))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return baton.ErrNotFound
	case errors.Is(err, baton.ErrPurgedRecently):
		return err
	case err != nil:
		return fmt.Errorf("pgstore: purge queue: %w", err)
	}
	return nil
}

// queueGone drops the row kept of the queue id if err says the queue is
// gone (queuecache.go), and returns err.
func (s *Store) queueGone(id uint64, err error) error {
	if errors.Is(err, baton.ErrNotFound) {
		s.queues.dropID(id)
	}
	return err
}

// isFIFO reports whether the queue is a FIFO queue; ErrNotFound if it does
// not exist (now: a cached answer does not prove it still exists).
func (s *Store) isFIFO(ctx context.Context, queueID uint64) (bool, error) {
	if fifo, ok := s.fifo.Load(queueID); ok {
		return fifo.(bool), nil
	}
	var fifo bool
	err := s.retry(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT fifo FROM baton_queues WHERE id = $1`, int64(queueID)).Scan(&fifo)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, baton.ErrNotFound
	}
	if err != nil {
		return false, err
	}
	s.fifo.Store(queueID, fifo)
	return fifo, nil
}
