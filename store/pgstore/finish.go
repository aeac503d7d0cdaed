package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/baton-sqs/baton/internal/migrate"
)

// On a database an earlier Baton used, migration 0013 keeps the indexes
// the statements of the release before it read messages through (see the
// migration), so that nodes of that release still serving during a
// rolling upgrade do not read the whole table. Every send and lease then
// writes to them too, until FinishUpgrade drops them, which the operator
// runs once no node of that release is left (`baton store
// finish-upgrade`).
//
// Nothing but the operator can know that none is left: a node cut off
// from the database has no session to see. What the database can show is
// which sessions are not this build's: every session of this Baton (and
// of later ones, which must keep doing so while a kept index may remain)
// holds the build mark, a shared advisory lock taken as it connects
// (markSessions), which the release before never takes, though it names
// its sessions "baton" too. FinishUpgrade refuses while a session of the
// database without the mark is connected: it may be an old node's.

// keptIndexes are the indexes of baton_messages migration 0013 keeps for
// the release before it: its full index of groups and 0012's full index
// of states, or, on a database upgraded from 0011, 0011's two indexes of
// states.
var keptIndexes = []string{
	"baton_messages_by_group_0012",
	"baton_messages_by_state_0012",
	"baton_messages_by_visible",
	"baton_messages_leased",
}

// keepingVersion is the migration that keeps keptIndexes.
const keepingVersion = 13

// The build mark's advisory lock key, in its two-int4 form (pg_locks'
// objsubid 2; the migration lock and the task locks use the bigint form,
// objsubid 1): "bato", and the schema version whose indexes this build's
// statements read.
const (
	buildMarkClass = 0x6261746f
	buildMarkObj   = keepingVersion
)

// markSessions makes every connection cc opens (the pool's, the
// listener's, the task locks', the migrations') take the build mark once
// connected. A shared lock never waits: nothing takes it exclusively.
func markSessions(cc *pgx.ConnConfig) {
	before := cc.AfterConnect
	cc.AfterConnect = func(ctx context.Context, c *pgconn.PgConn) error {
		if before != nil {
			if err := before(ctx, c); err != nil {
				return err
			}
		}
		_, err := c.Exec(ctx, fmt.Sprintf(`SELECT pg_advisory_lock_shared(%d, %d)`, buildMarkClass, buildMarkObj)).ReadAll()
		return err
	}
}

// KeptIndex is an index kept for the release before schema 13, and its
// size.
type KeptIndex struct {
	Name  string
	Bytes int64
}

// Session is a session of the database, as pg_stat_activity shows it.
// Fields another role's session hides from a role without
// pg_read_all_stats are empty.
type Session struct {
	PID             int
	ApplicationName string
	User            string
	Client          string // address, or "local" for a unix socket
	Started         time.Time
	State           string
	Query           string // its last statement, cut short
}

func (s Session) String() string {
	return fmt.Sprintf("pid %d, application_name %q, user %q, from %s, connected %s, %s, last statement %q",
		s.PID, s.ApplicationName, s.User, s.Client, s.Started.UTC().Format(time.RFC3339), s.State, s.Query)
}

// UnmarkedSessionsError is FinishUpgrade's refusal: sessions of the
// database not holding the build mark were connected, which may be nodes
// of the release before.
type UnmarkedSessionsError struct {
	Sessions []Session
	// Dropped are the kept indexes dropped before the sessions were seen
	// (none when they were there from the start).
	Dropped []KeptIndex
}

func (e *UnmarkedSessionsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d session(s) of the database are not of this Baton (they do not hold its build mark, which every session of this release and later ones takes): "+
		"each may be a node of a release before schema %d, which reads messages through the kept indexes, so they are not dropped", len(e.Sessions), keepingVersion)
	if len(e.Dropped) > 0 {
		fmt.Fprintf(&b, " (%s dropped before the session(s) came)", indexNames(e.Dropped))
	}
	b.WriteString(". Stop or upgrade each such node, close any other client of the database (or, for a client you know is no Baton node, name its application with --ignore-application), and run it again:")
	for _, s := range e.Sessions {
		b.WriteString("\n  ")
		b.WriteString(s.String())
	}
	return b.String()
}

// ErrNotUpgraded is FinishUpgrade's refusal of a database whose schema is
// not this build's.
var ErrNotUpgraded = errors.New("pgstore: the database's schema is not this Baton's")

// FinishOptions are FinishUpgrade's options.
type FinishOptions struct {
	// IgnoreApplications are application names (pg_stat_activity's
	// application_name) of sessions the operator knows are no Baton
	// node's, a monitor's or psql's say: they are not counted. Baton's own,
	// "baton", which nodes of every release take, cannot be among them.
	IgnoreApplications []string
	// Logger is told while FinishUpgrade waits for the migration lock,
	// and who holds it, as a server's migration is; slog.Default() if
	// nil.
	Logger *slog.Logger
}

// errIgnoreBaton refuses to ignore the sessions every Baton node names
// itself by.
var errIgnoreBaton = errors.New(`pgstore: the sessions of application "baton" cannot be ignored: nodes of every release take that name; stop or upgrade the old nodes instead`)

// FinishUpgrade drops the indexes migration 0013 kept on the database at
// url for nodes of the release before it, once the operator knows none is
// left, and returns those it dropped: none when none is left (a run
// again). It holds the migration lock throughout, so that it runs apart
// from any server's migrations. Before each drop it lists the sessions of
// the database without the build mark (markSessions), but those of the
// applications opts ignores; if there is one, it drops nothing more and
// returns an *UnmarkedSessionsError. Each drop is a DROP INDEX
// CONCURRENTLY, which holds off no send, receive or delete; cut short, it
// is run again by the next run. It refuses, with ErrNotUpgraded, a
// database a node of this build has not migrated.
func FinishUpgrade(ctx context.Context, url string, opts FinishOptions) ([]KeptIndex, error) {
	if slices.Contains(opts.IgnoreApplications, "baton") {
		return nil, errIgnoreBaton
	}
	cfg, err := poolConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := lockMigrations(ctx, conn, log, "finish-upgrade"); err != nil {
		return nil, fmt.Errorf("pgstore: take the migration lock: %w", err)
	}
	if err := checkUpgraded(ctx, conn); err != nil {
		return nil, err
	}
	kept, err := keptIndexesOn(ctx, conn)
	if err != nil {
		return nil, err
	}
	var dropped []KeptIndex
	for _, k := range kept {
		others, err := unmarkedSessions(ctx, conn, opts.IgnoreApplications)
		if err != nil {
			return dropped, err
		}
		if len(others) > 0 {
			return dropped, &UnmarkedSessionsError{Sessions: others, Dropped: dropped}
		}
		if _, err := conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+pgx.Identifier{k.Name}.Sanitize()); err != nil {
			return dropped, fmt.Errorf("pgstore: drop %s: %w", k.Name, err)
		}
		dropped = append(dropped, k)
	}
	return dropped, nil
}

// checkUpgraded returns ErrNotUpgraded, saying why, unless the database
// has every migration of this build and none newer.
func checkUpgraded(ctx context.Context, conn *pgx.Conn) error {
	all, err := migrate.Load(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	var version int
	err = conn.QueryRow(ctx, `SELECT CASE WHEN to_regclass('baton_schema_migrations') IS NULL THEN 0
		ELSE (SELECT coalesce(max(version), 0) FROM baton_schema_migrations) END`).Scan(&version)
	if err != nil {
		return fmt.Errorf("pgstore: read the schema's version: %w", err)
	}
	switch {
	case version < len(all):
		return fmt.Errorf("%w: it has schema version %d, this Baton's is %d: start a node of this Baton on it first (it migrates), then replace the others", ErrNotUpgraded, version, len(all))
	case version > len(all):
		return fmt.Errorf("%w: it has schema version %d, newer than this Baton's %d: use the newer Baton", ErrNotUpgraded, version, len(all))
	}
	return nil
}

// querier is a connection or the pool.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// keptIndexesOn lists the kept indexes the database still has, in the
// order of keptIndexes, with their sizes.
func keptIndexesOn(ctx context.Context, db querier) ([]KeptIndex, error) {
	rows, err := db.Query(ctx, `
		SELECT c.relname, pg_relation_size(c.oid)
		FROM unnest($1::text[]) WITH ORDINALITY AS k(name, n)
			JOIN pg_class c ON c.oid = to_regclass(k.name)
			JOIN pg_index i ON i.indexrelid = c.oid AND i.indrelid = 'baton_messages'::regclass
		ORDER BY k.n`, keptIndexes)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list the kept indexes: %w", err)
	}
	kept, err := pgx.CollectRows(rows, pgx.RowToStructByPos[KeptIndex])
	if err != nil {
		return nil, fmt.Errorf("pgstore: list the kept indexes: %w", err)
	}
	return kept, nil
}

// unmarkedSessions lists the client sessions of the database, other than
// conn's and those of the applications ignore names, that do not hold the
// build mark. (NOT EXISTS, not NOT IN: a prepared transaction's lock has
// no pid. A session whose type is hidden from this role counts as a
// client's.)
func unmarkedSessions(ctx context.Context, conn *pgx.Conn, ignore []string) ([]Session, error) {
	rows, err := conn.Query(ctx, `
		SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.usename::text, ''),
			coalesce(host(a.client_addr), CASE WHEN a.client_port = -1 THEN 'local' ELSE '' END),
			coalesce(a.backend_start, 'epoch'), coalesce(a.state, ''), left(btrim(regexp_replace(coalesce(a.query, ''), '\s+', ' ', 'g')), 100)
		FROM pg_stat_activity a
		WHERE a.datname = current_database() AND coalesce(a.backend_type, 'client backend') = 'client backend' AND a.pid <> pg_backend_pid()
			AND coalesce(a.application_name, '') <> ALL ($3::text[])
			AND NOT EXISTS (SELECT FROM pg_locks l
				WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
					AND l.classid = $1::oid AND l.objid = $2::oid
					AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
		ORDER BY a.backend_start, a.pid`, int64(buildMarkClass), int64(buildMarkObj), append([]string{}, ignore...))
	if err != nil {
		return nil, fmt.Errorf("pgstore: list the database's sessions: %w", err)
	}
	sessions, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Session])
	if err != nil {
		return nil, fmt.Errorf("pgstore: list the database's sessions: %w", err)
	}
	return sessions, nil
}

// logKeptIndexes logs, once at Open, the kept indexes the database still
// has, what they cost and how to drop them.
func (s *Store) logKeptIndexes(ctx context.Context) {
	kept, err := keptIndexesOn(ctx, s.pool)
	if err != nil {
		s.log.Warn("could not check for indexes kept for nodes of an earlier release", "err", err)
		return
	}
	if len(kept) == 0 {
		return
	}
	var bytes int64
	for _, k := range kept {
		bytes += k.Bytes
	}
	s.log.Warn(fmt.Sprintf("the database keeps %d indexes of messages for nodes of a release before schema %d, "+
		"which every send and lease also writes to; once no such node is left, drop them with `baton store finish-upgrade --store URL`",
		len(kept), keepingVersion), "indexes", indexNames(kept), "bytes", bytes)
}

// indexNames are the names of kept, comma separated.
func indexNames(kept []KeptIndex) string {
	names := make([]string, len(kept))
	for i, k := range kept {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}
