package pgstore

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/migrate"
)

// The schema is a series of migrations, migrations/NNNN_name.sql, applied
// in order and each once by internal/migrate. A migration is never edited
// once released: a change is a new file.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock key that serialises migrations among
// servers opening one database at once ("baton" in ASCII).
const migrationLock = 0x626174_6f6e

// regionVersion is the migration that gives queues a region; rows written
// before it get the store's default region in its transaction.
const regionVersion = 7

// migrate applies the migrations the database lacks, in one transaction
// under an advisory lock, so that servers starting together neither race
// nor apply one twice, and a failed migration leaves nothing behind: each
// migration's own transaction is a savepoint of that one. It refuses a
// database migrated by a newer Baton.
func (s *Store) migrate(ctx context.Context) error {
	all, err := migrate.Load(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	// A migration may rewrite a large table: its run is not cut off at the
	// retry bound, as a queue operation's is.
	err = s.inTxOpts(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return err
		}
		return migrate.Run(ctx, pgDB{tx}, migrate.Dialect{
			Setup: `CREATE TABLE IF NOT EXISTS baton_schema_migrations (
				version integer PRIMARY KEY,
				name    text NOT NULL)`,
			Current: `SELECT coalesce(max(version), 0) FROM baton_schema_migrations`,
			Record: func(m migrate.Migration) (string, []any) {
				return `INSERT INTO baton_schema_migrations (version, name) VALUES ($1, $2)`, []any{m.Version, m.Name}
			},
			After: s.afterMigration,
			Applied: func(m migrate.Migration) {
				s.log.Info("applied schema migration", "migration", m.Name)
			},
		}, all)
	}, retryOpts{write: true, unboundedRuns: true})
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	return nil
}

// afterMigration gives the queues of a database written before queues had a
// region the store's default region, and makes it the column's default
// too, so that a server not yet upgraded, which names no region, keeps
// creating queues where its clients look for them.
func (s *Store) afterMigration(ctx context.Context, tx migrate.Tx, m migrate.Migration) error {
	if m.Version != regionVersion {
		return nil
	}
	for _, table := range []string{"baton_queues", "baton_deleted_queues"} {
		if err := tx.Exec(ctx, `UPDATE `+table+` SET region = $1 WHERE region = ''`, s.defaultRegion); err != nil {
			return err
		}
		// The region is a validated name (baton.ValidRegion): safe to quote.
		if err := tx.Exec(ctx, `ALTER TABLE `+table+` ALTER COLUMN region SET DEFAULT '`+s.defaultRegion+`'`); err != nil {
			return err
		}
	}
	return nil
}

// pgDB runs each migration in a savepoint of tx, pgx's nested transaction.
type pgDB struct{ tx pgx.Tx }

func (d pgDB) Begin(ctx context.Context) (migrate.Tx, error) {
	sp, err := d.tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return pgTx{sp}, nil
}

type pgTx struct{ tx pgx.Tx }

func (t pgTx) Exec(ctx context.Context, query string, args ...any) error {
	_, err := t.tx.Exec(ctx, query, args...)
	return err
}

func (t pgTx) QueryInt(ctx context.Context, query string, args ...any) (int, error) {
	var v int
	err := t.tx.QueryRow(ctx, query, args...).Scan(&v)
	return v, err
}

func (t pgTx) Commit(ctx context.Context) error { return t.tx.Commit(ctx) }

func (t pgTx) Rollback(ctx context.Context) error {
	if err := t.tx.Rollback(ctx); err != nil && err != pgx.ErrTxClosed {
		return err
	}
	return nil
}
