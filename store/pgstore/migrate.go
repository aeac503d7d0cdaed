package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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

// migrate applies the migrations the database lacks, each in a transaction
// of its own with its record, or, one run outside a transaction (a
// concurrent index build), statement by statement (internal/migrate). A
// session advisory lock serialises the servers that open one database at
// once, so that none applies a migration twice; a migration that fails
// leaves those before it applied. It refuses a database migrated by a
// newer Baton.
func (s *Store) migrate(ctx context.Context) error {
	all, err := migrate.Load(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	// A migration may rewrite or index a large table: its run is not cut
	// off at the retry bound, as a queue operation's is.
	err = s.retryOp(ctx, func(ctx context.Context) error {
		for attempt := 1; ; attempt++ {
			err := s.migrateOnce(ctx, all)
			if !isLockTimeout(err) {
				return err
			}
			s.log.Warn("schema migration waits: another session's transaction holds a lock the migration needs; it tries again",
				"attempt", attempt, "in", migrationLockWaitRetry, "err", err)
			if !pause(ctx, migrationLockWaitRetry) {
				return err
			}
		}
	}, retryOpts{write: true, unboundedRuns: true})
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	return nil
}

// migrateOnce runs the migrations on a session of its own holding the
// migration lock.
func (s *Store) migrateOnce(ctx context.Context, all []migrate.Migration) error {
	conn, err := s.migrationSession(ctx)
	if err != nil {
		return err
	}
	// Closing the session releases its lock.
	defer conn.Close(context.WithoutCancel(ctx))
	var began time.Time
	return migrate.Run(ctx, pgDB{conn}, migrate.Dialect{
		Setup: `CREATE TABLE IF NOT EXISTS baton_schema_migrations (
			version integer PRIMARY KEY,
			name    text NOT NULL)`,
		Current: `SELECT coalesce(max(version), 0) FROM baton_schema_migrations`,
		Record: func(m migrate.Migration) (string, []any) {
			return `INSERT INTO baton_schema_migrations (version, name) VALUES ($1, $2)`, []any{m.Version, m.Name}
		},
		After:   s.afterMigration,
		Prepare: dropInvalidIndexes,
		Applying: func(m migrate.Migration) {
			began = time.Now()
			s.log.Info("applying schema migration: on a large table it may take minutes, and this server serves once every migration is applied", "migration", m.Name)
		},
		Applied: func(m migrate.Migration) {
			s.log.Info("applied schema migration", "migration", m.Name, "took", time.Since(began).Round(time.Millisecond))
		},
	}, all)
}

// A migration's transaction waits at most migrationLockTimeout for a lock
// (lock_timeout), then gives up and is run again migrationLockWaitRetry
// later. A table lock it waits for holds off, while it waits, every
// statement that comes after it for the same table: the queue operations
// of every server. A transaction open for long (a pg_dump, an idle
// session) would so stop them all; bounded, it delays them by at most the
// timeout, well within their retry bound, and lets them run between tries.
const (
	migrationLockTimeout   = "1s"
	migrationLockWaitRetry = 2 * time.Second
)

// isLockTimeout reports whether err is a lock wait that met lock_timeout.
func isLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// migrationLockPoll is how often a server waiting to migrate tries the lock.
const migrationLockPoll = 200 * time.Millisecond

// migrationSession opens a session of its own and takes the migration lock
// on it (lockMigrations).
func (s *Store) migrationSession(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return nil, err
	}
	if err := lockMigrations(ctx, conn, s.log, "schema migration"); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := keepPreviousIndexes(ctx, conn); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return conn, nil
}

// lockMigrations takes the migration lock on conn, waiting while another
// session holds it: a server migrating, or dropping the indexes kept for
// an earlier release (FinishUpgrade). It waits by trying the lock again
// and again, not in pg_advisory_lock: a statement waiting holds a
// snapshot, and a concurrent index build or drop, which waits for every
// transaction older than itself, would wait for it while it waits for the
// builder's lock, both for ever. Closing conn releases the lock.
//
// The wait has no end of its own, and the lock's holder may not be a
// server at work: a server stopped (killed) mid-migration leaves its
// session, and so the lock, in the database until the statement it sent
// ends, which for an index build of a large table takes minutes. So the
// waiter (a server's schema migration, or FinishUpgrade: waiter names it
// in the log) says that it waits and who holds the lock, once it has
// waited migrationWaitLogAfter (servers started together wait for each
// other's check of the schema, a fraction of that) and then every
// migrationWaitLogEvery, and says when it took the lock.
func lockMigrations(ctx context.Context, conn *pgx.Conn, log *slog.Logger, waiter string) error {
	start := time.Now()
	var logged time.Time
	for {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(migrationLock)).Scan(&got); err != nil {
			return err
		}
		if got {
			if !logged.IsZero() {
				log.Info(waiter+" lock taken", "waited", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		waited := time.Since(start)
		if waited >= migrationWaitLogAfter && (logged.IsZero() || time.Since(logged) >= migrationWaitLogEvery) {
			logged = time.Now()
			logMigrationLockHolder(ctx, conn, log, waiter, waited)
		}
		if !pause(ctx, migrationLockPoll) {
			return ctx.Err()
		}
	}
}

// How long a server waits for the migration lock before it says so, and
// how often it says so again.
const (
	migrationWaitLogAfter = time.Second
	migrationWaitLogEvery = 10 * time.Second
)

// logMigrationLockHolder logs that the migration lock is awaited, naming
// the session that holds it as pg_locks and pg_stat_activity show it (a
// role sees the last statement of its own sessions, or of all with
// pg_read_all_stats).
func logMigrationLockHolder(ctx context.Context, conn *pgx.Conn, log *slog.Logger, waiter string, waited time.Duration) {
	msg := waiter + " waits for the migration lock, which another session holds: a server migrating, " +
		"`baton store finish-upgrade`, or a server stopped while migrating whose statement still runs in the database " +
		"(end it with pg_terminate_backend(holder_pid) if no server is migrating)"
	// A bigint advisory key is in pg_locks as its high and low 32 bits,
	// objsubid 1.
	var (
		pid                                 int32
		app, user, client, state, statement string
		since                               time.Time
	)
	err := conn.QueryRow(ctx, `
		SELECT l.pid, coalesce(a.application_name, ''), coalesce(a.usename::text, ''),
			coalesce(host(a.client_addr), 'local'), coalesce(a.backend_start, 'epoch'),
			coalesce(a.state, ''), left(coalesce(a.query, ''), 200)
		FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid
		LIMIT 1`, int64(migrationLock>>32), int64(migrationLock&0xffffffff)).
		Scan(&pid, &app, &user, &client, &since, &state, &statement)
	if err != nil {
		// Gone meanwhile (the next try takes the lock), or not to be read.
		log.Warn(msg, "waited", waited.Round(time.Second), "holder_err", err)
		return
	}
	log.Warn(msg, "waited", waited.Round(time.Second), "holder_pid", pid, "holder_application", app,
		"holder_user", user, "holder_client", client, "holder_connected", since.UTC().Format(time.RFC3339),
		"holder_state", state, "holder_statement", statement)
}

// keepPreviousIndexes sets baton.keep_previous_indexes on the migration
// session when the database has a schema already: a migration that
// replaces an index the statements of the release before need (0013)
// then keeps the old one for the servers not yet upgraded. A new
// database has no such servers.
func keepPreviousIndexes(ctx context.Context, conn *pgx.Conn) error {
	var table bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('baton_schema_migrations') IS NOT NULL`).Scan(&table); err != nil || !table {
		return err
	}
	var used bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM baton_schema_migrations)`).Scan(&used); err != nil || !used {
		return err
	}
	_, err := conn.Exec(ctx, `SET baton.keep_previous_indexes = on`)
	return err
}

// dropInvalidIndexes drops the INVALID indexes of Baton's tables before a
// migration run outside a transaction: a concurrent build cut short (a
// crash, a lost connection, a failure) leaves its index so, which its
// CREATE INDEX CONCURRENTLY IF NOT EXISTS run again would take for built.
// Only migrations build Baton's indexes, and the migration lock is held.
func dropInvalidIndexes(ctx context.Context, db migrate.DB, _ migrate.Migration) error {
	conn := db.(pgDB).conn
	rows, err := conn.Query(ctx, `
		SELECT format('%I.%I', n.nspname, c.relname) FROM pg_index i
			JOIN pg_class c ON c.oid = i.indexrelid
			JOIN pg_class t ON t.oid = i.indrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE NOT i.indisvalid AND t.relname LIKE 'baton\_%' AND n.nspname = current_schema()`)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := db.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+name); err != nil {
			return err
		}
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

// pgDB runs each migration on the migration session: in a transaction of
// its own, or statement by statement outside one.
type pgDB struct{ conn *pgx.Conn }

func (d pgDB) Begin(ctx context.Context) (migrate.Tx, error) {
	tx, err := d.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+migrationLockTimeout+`'`); err != nil {
		tx.Rollback(ctx)
		return nil, err
	}
	return pgTx{tx}, nil
}

func (d pgDB) Exec(ctx context.Context, query string) error {
	_, err := d.conn.Exec(ctx, query)
	return err
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
