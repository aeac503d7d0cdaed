package consumer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// SQLStore is an IdempotencyStore in a SQL database through database/sql.
// Its schema and statements work unchanged on SQLite (3.24 or later) and
// PostgreSQL: $n placeholders, INSERT … ON CONFLICT … DO UPDATE … WHERE,
// times as Unix milliseconds in BIGINT columns, and no SQL clock (the
// runtime passes the time in).
//
//	CREATE TABLE IF NOT EXISTS <table> (
//		idem_key   TEXT PRIMARY KEY,
//		owner      TEXT NOT NULL,
//		epoch      BIGINT NOT NULL,
//		done       INTEGER NOT NULL,
//		expires_at BIGINT NOT NULL
//	)
//
// Call Migrate once to create the table, and Prune now and then to delete
// expired records (expired records are ignored either way).
type SQLStore struct {
	db    *sql.DB
	table string
	q     sqlStatements
}

type sqlStatements struct {
	claim, read, renew, complete, abandon, prune string
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// DefaultIdempotencyTable is SQLStore's table unless NewSQLStore is given
// another.
const DefaultIdempotencyTable = "baton_idempotency"

// NewSQLStore returns a store using table ("" means
// DefaultIdempotencyTable) in db. The table name must be a plain
// identifier.
func NewSQLStore(db *sql.DB, table string) (*SQLStore, error) {
	if table == "" {
		table = DefaultIdempotencyTable
	}
	if !tableName.MatchString(table) {
		return nil, fmt.Errorf("consumer: bad table name %q", table)
	}
	t := table
	return &SQLStore{db: db, table: t, q: sqlStatements{
		claim: `INSERT INTO ` + t + ` (idem_key, owner, epoch, done, expires_at) VALUES ($1, $2, $3, 0, $4)
ON CONFLICT (idem_key) DO UPDATE SET owner = excluded.owner, epoch = excluded.epoch, done = 0, expires_at = excluded.expires_at
WHERE ` + t + `.expires_at <= $5 OR (` + t + `.owner = excluded.owner AND ` + t + `.done = 0)`,
		read:  `SELECT owner, done, expires_at FROM ` + t + ` WHERE idem_key = $1`,
		renew: `UPDATE ` + t + ` SET expires_at = $3 WHERE idem_key = $1 AND owner = $2 AND done = 0 AND expires_at < $3`,
		complete: `INSERT INTO ` + t + ` (idem_key, owner, epoch, done, expires_at) VALUES ($1, $2, $3, 1, $4)
ON CONFLICT (idem_key) DO UPDATE SET owner = excluded.owner, epoch = excluded.epoch, done = 1, expires_at = excluded.expires_at
WHERE ` + t + `.owner = excluded.owner OR (` + t + `.done = 0 AND ` + t + `.expires_at <= $5)`,
		abandon: `DELETE FROM ` + t + ` WHERE idem_key = $1 AND owner = $2 AND done = 0`,
		prune:   `DELETE FROM ` + t + ` WHERE expires_at <= $1`,
	}}, nil
}

// Migrate creates the table and its index if they do not exist.
func (s *SQLStore) Migrate(ctx context.Context) error {
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ` + s.table + ` (
	idem_key   TEXT PRIMARY KEY,
	owner      TEXT NOT NULL,
	epoch      BIGINT NOT NULL,
	done       INTEGER NOT NULL,
	expires_at BIGINT NOT NULL
)`,
		`CREATE INDEX IF NOT EXISTS ` + s.table + `_expires_at ON ` + s.table + ` (expires_at)`,
	}
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("consumer: migrate %s: %w", s.table, err)
		}
	}
	return nil
}

// Claim implements IdempotencyStore.
func (s *SQLStore) Claim(ctx context.Context, p ClaimParams) (ClaimResult, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return ClaimResult{}, fmt.Errorf("consumer: claim %q: %w", p.Key, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.q.claim, p.Key, p.Owner, p.Epoch, p.Until.UnixMilli(), p.Now.UnixMilli()); err != nil {
		return ClaimResult{}, fmt.Errorf("consumer: claim %q: %w", p.Key, err)
	}
	var owner string
	var done int
	var until int64
	if err := tx.QueryRowContext(ctx, s.q.read, p.Key).Scan(&owner, &done, &until); err != nil {
		return ClaimResult{}, fmt.Errorf("consumer: claim %q: read back: %w", p.Key, err)
	}
	if err := tx.Commit(); err != nil {
		return ClaimResult{}, fmt.Errorf("consumer: claim %q: %w", p.Key, err)
	}
	r := ClaimResult{Owner: owner, Until: time.UnixMilli(until)}
	switch {
	case done != 0:
		r.State = Completed
	case owner == p.Owner:
		r.State = Claimed
	default:
		r.State = InProgress
	}
	return r, nil
}

// Renew implements IdempotencyStore.
func (s *SQLStore) Renew(ctx context.Context, p RenewParams) error {
	res, err := s.db.ExecContext(ctx, s.q.renew, p.Key, p.Owner, p.Until.UnixMilli())
	if err != nil {
		return fmt.Errorf("consumer: renew %q: %w", p.Key, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		return nil
	}
	// Nothing changed: the record is gone or someone else's, or it already
	// reaches as far.
	var owner string
	var done int
	var until int64
	err = s.db.QueryRowContext(ctx, s.q.read, p.Key).Scan(&owner, &done, &until)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrFenced
	case err != nil:
		return fmt.Errorf("consumer: renew %q: %w", p.Key, err)
	case owner != p.Owner || done != 0:
		return ErrFenced
	}
	return nil
}

// Complete implements IdempotencyStore.
func (s *SQLStore) Complete(ctx context.Context, p CompleteParams) error {
	res, err := s.db.ExecContext(ctx, s.q.complete, p.Key, p.Owner, p.Epoch, p.KeepUntil.UnixMilli(), p.Now.UnixMilli())
	if err != nil {
		return fmt.Errorf("consumer: complete %q: %w", p.Key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("consumer: complete %q: %w", p.Key, err)
	}
	if n == 0 {
		return ErrFenced
	}
	return nil
}

// Abandon implements IdempotencyStore.
func (s *SQLStore) Abandon(ctx context.Context, p AbandonParams) error {
	if _, err := s.db.ExecContext(ctx, s.q.abandon, p.Key, p.Owner); err != nil {
		return fmt.Errorf("consumer: abandon %q: %w", p.Key, err)
	}
	return nil
}

// Prune deletes the records that expired by now and returns how many.
func (s *SQLStore) Prune(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.q.prune, now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("consumer: prune %s: %w", s.table, err)
	}
	return res.RowsAffected()
}
