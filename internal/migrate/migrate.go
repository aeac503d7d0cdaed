// Package migrate is the schema migration runner of the SQL stores
// (store/pgstore, and the reader of the SQLite data directories of earlier
// releases, store/pebblestore/internal/sqliteread): it reads a store's embedded,
// numbered .sql files and applies those newer than the version the database
// records, each in a transaction of its own together with its record, or,
// for a migration that cannot run in one (NoTransactionLine), statement by
// statement and then its record. What differs between the databases (the
// driver, the SQL of the bookkeeping, a data fix after a migration, the
// tidying before a migration run outside a transaction) is passed in.
package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Migration is one step of a schema, read from a file NNNN_name.sql.
type Migration struct {
	// Version is NNNN: 1 for the first migration, one more for each next.
	Version int
	// Name is the file's name without ".sql".
	Name string
	// SQL is the file's content.
	SQL string
	// NoTransaction: the file has the line NoTransactionLine, and its
	// statements run one by one, each outside a transaction.
	NoTransaction bool
}

// NoTransactionLine, a line of its own in a migration's file, makes it a
// migration run outside a transaction: each of its statements runs by
// itself, as PostgreSQL's CREATE INDEX CONCURRENTLY and DROP INDEX
// CONCURRENTLY must, and its record is written once they all succeeded.
// A run cut short (a crash, a lost connection) leaves the statements
// before the cut done and the migration unrecorded, so the next start runs
// it again from its first statement: each statement must leave the same
// schema when run again (IF NOT EXISTS, IF EXISTS), and Dialect.Prepare
// tidies what a statement cut short left. Statements end with ";" at the
// end of a line; a ";" inside a line (a DO block written on one line)
// does not end one.
const NoTransactionLine = "-- migrate: no transaction"

// Statements are m's statements, in order: its SQL split at each ";" that
// ends a line, without comment lines and empty statements.
func (m Migration) Statements() []string {
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(m.SQL) {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		if strings.HasSuffix(t, ";") {
			if st := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"); st != "" {
				out = append(out, st)
			}
			cur.Reset()
		}
	}
	if st := strings.TrimSpace(cur.String()); st != "" {
		out = append(out, st)
	}
	return out
}

// Load returns the migrations in directory dir of fsys, in version order.
// Every file of dir must be named NNNN_name.sql, and the versions must run
// 1, 2, 3… without a gap or a repeat.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		base, isSQL := strings.CutSuffix(e.Name(), ".sql")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !isSQL || !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		noTx := slices.Contains(strings.Split(string(b), "\n"), NoTransactionLine)
		out = append(out, Migration{Version: v, Name: base, SQL: string(b), NoTransaction: noTx})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", m.Name, i+1)
		}
	}
	return out, nil
}

// DB begins the transactions migrations run in, and runs the statements of
// a migration run outside a transaction.
type DB interface {
	Begin(ctx context.Context) (Tx, error)
	// Exec runs one statement outside a transaction.
	Exec(ctx context.Context, query string) error
}

// Tx is a transaction of the store's database.
type Tx interface {
	// Exec runs a statement, or a migration's several statements when it
	// has no arguments.
	Exec(ctx context.Context, query string, args ...any) error
	// QueryInt runs a query of one row of one integer column.
	QueryInt(ctx context.Context, query string, args ...any) (int, error)
	Commit(ctx context.Context) error
	// Rollback ends a transaction not committed; after Commit it does
	// nothing.
	Rollback(ctx context.Context) error
}

// Dialect is what differs between the stores' databases.
type Dialect struct {
	// Setup creates the table of applied versions if it is missing.
	Setup string
	// Current reads the latest applied version: 0 if none.
	Current string
	// Record returns the statement recording m as applied.
	Record func(m Migration) (query string, args []any)
	// After, if not nil, runs in m's transaction after m's SQL: a change of
	// data that depends on the store's configuration, which the SQL file
	// cannot know.
	After func(ctx context.Context, tx Tx, m Migration) error
	// Applying, if not nil, is told of each migration before it runs: a
	// migration may take long on a large table, and the caller may say so.
	Applying func(m Migration)
	// Applied, if not nil, is told of each migration once it is committed.
	Applied func(m Migration)
	// Prepare, if not nil, runs before each run of a migration outside a
	// transaction: it tidies what an earlier run cut short may have left
	// that a statement's IF NOT EXISTS would take for done (in PostgreSQL,
	// an index whose concurrent build failed, left INVALID).
	Prepare func(ctx context.Context, db DB, m Migration) error
}

// Run brings the database to the last of all (as Load returns them): it
// reads the version the database records and applies each later migration
// (telling Applying before, Applied after) in a transaction of its own, with After and the record, or, for a
// migration run outside a transaction, Prepare, its statements one by one,
// then After and the record in a transaction. It refuses a database whose
// version is newer than all knows: a newer Baton wrote it. Runs on one
// database must not overlap: the caller serialises them.
func Run(ctx context.Context, db DB, d Dialect, all []Migration) error {
	current, err := inTx(ctx, db, func(tx Tx) (int, error) {
		if err := tx.Exec(ctx, d.Setup); err != nil {
			return 0, fmt.Errorf("create the schema's version table: %w", err)
		}
		v, err := tx.QueryInt(ctx, d.Current)
		if err != nil {
			return 0, fmt.Errorf("read the schema's version: %w", err)
		}
		return v, nil
	})
	if err != nil {
		return err
	}
	if current > len(all) {
		return fmt.Errorf("the database has schema version %d, newer than this Baton's %d: it was written by a newer Baton", current, len(all))
	}
	for _, m := range all[current:] {
		if d.Applying != nil {
			d.Applying(m)
		}
		if m.NoTransaction {
			if err := runOutside(ctx, db, d, m); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
		}
		_, err := inTx(ctx, db, func(tx Tx) (int, error) {
			if !m.NoTransaction {
				if err := tx.Exec(ctx, m.SQL); err != nil {
					return 0, err
				}
			}
			if d.After != nil {
				if err := d.After(ctx, tx, m); err != nil {
					return 0, err
				}
			}
			q, args := d.Record(m)
			return 0, tx.Exec(ctx, q, args...)
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if d.Applied != nil {
			d.Applied(m)
		}
	}
	return nil
}

// runOutside runs Prepare and m's statements one by one, outside a
// transaction.
func runOutside(ctx context.Context, db DB, d Dialect, m Migration) error {
	if d.Prepare != nil {
		if err := d.Prepare(ctx, db, m); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
	}
	for _, stmt := range m.Statements() {
		if err := db.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// inTx runs f in a transaction of db and commits it if f succeeds.
func inTx(ctx context.Context, db DB, f func(Tx) (int, error)) (int, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	v, err := f(tx)
	if err != nil {
		return 0, err
	}
	return v, tx.Commit(ctx)
}

// SQL is a DB of database/sql.
func SQL(db *sql.DB) DB { return sqlDB{db} }

type sqlDB struct{ db *sql.DB }

func (d sqlDB) Begin(ctx context.Context) (Tx, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return sqlTx{tx}, nil
}

func (d sqlDB) Exec(ctx context.Context, query string) error {
	_, err := d.db.ExecContext(ctx, query)
	return err
}

type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) Exec(ctx context.Context, query string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, query, args...)
	return err
}

func (t sqlTx) QueryInt(ctx context.Context, query string, args ...any) (int, error) {
	var v int
	err := t.tx.QueryRowContext(ctx, query, args...).Scan(&v)
	return v, err
}

func (t sqlTx) Commit(context.Context) error { return t.tx.Commit() }

func (t sqlTx) Rollback(context.Context) error {
	if err := t.tx.Rollback(); err != nil && err != sql.ErrTxDone {
		return err
	}
	return nil
}
