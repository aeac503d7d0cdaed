package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The schema is a series of migrations, migrations/NNNN_name.sql, applied
// in order and each once. A migration is never edited once released: a
// change is a new file.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock key that serialises migrations among
// servers opening one database at once ("baton" in ASCII).
const migrationLock = 0x626174_6f6e

// regionVersion is the migration that gives queues a region; rows written
// before it get the store's default region in its transaction.
const regionVersion = 7

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, path := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(path, "migrations/"), ".sql")
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version number", path)
		}
		b, err := migrationFiles.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a version", out[i-1].name, out[i].name)
		}
	}
	return out, nil
}

// migrate applies the migrations the database lacks, in one transaction
// under an advisory lock, so that servers starting together neither race
// nor apply one twice, and a failed migration leaves nothing behind. It
// refuses a database migrated by a newer Baton.
func (s *Store) migrate(ctx context.Context) error {
	all, err := migrations()
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS baton_schema_migrations (
			version integer PRIMARY KEY,
			name    text NOT NULL)`); err != nil {
			return err
		}
		var applied int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM baton_schema_migrations`).Scan(&applied); err != nil {
			return err
		}
		if latest := all[len(all)-1].version; applied > latest {
			return fmt.Errorf("the database's schema is at version %d, newer than this Baton's %d: upgrade Baton", applied, latest)
		}
		for _, m := range all {
			if m.version <= applied {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if m.version == regionVersion {
				// The column's default too, so that a server not yet
				// upgraded, which names no region, keeps creating queues
				// where its clients look for them. The region is a
				// validated name (baton.ValidRegion): safe to quote.
				for _, table := range []string{"baton_queues", "baton_deleted_queues"} {
					if _, err := tx.Exec(ctx, `UPDATE `+table+` SET region = $1 WHERE region = ''`, s.defaultRegion); err != nil {
						return fmt.Errorf("migration %s: %w", m.name, err)
					}
					if _, err := tx.Exec(ctx, `ALTER TABLE `+table+` ALTER COLUMN region SET DEFAULT '`+s.defaultRegion+`'`); err != nil {
						return fmt.Errorf("migration %s: %w", m.name, err)
					}
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO baton_schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return err
			}
			s.log.Info("applied schema migration", "migration", m.name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	return nil
}
