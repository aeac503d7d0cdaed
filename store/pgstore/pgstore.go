package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/lograte"
)

// Options configure Open. The zero value is usable.
type Options struct {
	// Logger receives connection trouble; slog.Default() if nil.
	Logger *slog.Logger
	// ConnectTimeout is how long Open keeps trying to reach an unreachable
	// database before it gives up, and then as long again to check its
	// session through connections cut at start (startup.go);
	// DefaultConnectTimeout if zero.
	ConnectTimeout time.Duration
	// DefaultRegion is the region a database written before queues had one
	// gives its queues when Open migrates it (default us-east-1): the
	// region the servers served them in, their --region.
	DefaultRegion string
	// RetryFor bounds how long an operation retries a transient failure
	// (a lost connection, a failover) before it fails with
	// baton.ErrUnavailable; DefaultRetryFor if zero, at most 2m30s (half
	// the time a send is remembered for its reruns).
	RetryFor time.Duration
	// Clock tells the time for what the store holds for a while: a
	// queue's row read (queuecache.go), a refusal /healthz reports
	// (health.go), a check of the schema (schema.go), the pacing of its
	// log lines (Store.paced) and how long the LISTEN connection was
	// lost; clock.System if nil. (The time a call acts at is
	// the engine's, passed in.)
	Clock clock.Clock
}

// DefaultConnectTimeout is how long Open waits for the database by default:
// long enough for a database started beside the server (a compose file, a
// failover) to come up.
const DefaultConnectTimeout = 30 * time.Second

// Pool defaults, used when the URL does not set pool_max_conns and the
// like. Long polls hold no connection while they wait, so a server needs few.
const (
	defaultMaxConns        = 16
	defaultMinConns        = 2
	defaultMaxConnLifetime = 30 * time.Minute
	defaultMaxConnIdleTime = 5 * time.Minute
	// per connection attempt, per host: a primary that hangs accepts
	// the TCP connection and never answers, and a URL listing several
	// hosts reaches the next one only once this passes (docs/postgresql.md)
	defaultConnectTimeout = 2 * time.Second
)

// Store is a baton.Store in PostgreSQL, safe for concurrent use by any
// number of goroutines and of servers sharing the database.
type Store struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	// defaultRegion is Options.DefaultRegion, for the migration that gives
	// queues a region.
	defaultRegion string
	// origin marks this store's notifications, so that it can tell them
	// from other servers'.
	origin string
	// fifo caches whether a queue id is a FIFO queue: fixed when the queue
	// is created, and ids are never reused.
	fifo sync.Map

	// backends are the server processes of the pool's connections, for
	// the listener's count of other servers (listenAndCount).
	backends *backendSet
	notify   notifier
	// group gathers sends, deletes and visibility changes into rounds.
	group grouper
	// reads shares the reads of concurrent requests of the same row.
	reads reads
	// queues keeps the queues' rows read by name, for a moment.
	queues queueCache
	// wake notifies the other servers of committed sends, releases and
	// moves.
	wake waker
	// connCfg opens the connections that hold task locks.
	connCfg *pgx.ConnConfig
	locks   taskLocks
	// groupLocks holds FIFO topics' group locks on a connection of its
	// own (grouplock.go).
	groupLocks groupLocks

	// tokensPruneAt is when (Unix nanoseconds) this server next forgets
	// old send tokens (tokensPruneDue).
	tokensPruneAt atomic.Int64

	// retryFor is Options.RetryFor; connectTimeout, Options.ConnectTimeout.
	retryFor, connectTimeout time.Duration
	// runs watches the runs of operations, for Ping; refusals, what the
	// database refused them.
	runs     runWatch
	refusals refusalWatch
	// schema knows Baton's tables and functions, to tell a schema
	// dropped from a statement's fault (schema.go).
	schema schemaWatch
	// renewal paces the closing of the pool's connections after a
	// refusal for read-only (renewSessions).
	renewal sessionRenewal
	// paced paces the log lines that may come many times a second:
	// operations that failed (giveUp) or succeeded (logRetried) after
	// retries, and the LISTEN connection's losses.
	paced *lograte.Paced
	// bg runs the goroutines Close ends and waits for.
	bg background
	// faultHook, if set by a test, fails a write after it succeeded.
	faultHook func(op string) error
}

// The store is what several servers share (store/storetest.RunShared).
var _ baton.SharedStore = (*Store)(nil)

// Open connects to the database at url (a postgres:// URL or a key=value
// connection string; pgxpool's pool_max_conns and friends are honoured),
// waits for it as opts.ConnectTimeout says, and brings its schema up to
// date before it returns. Several servers may open one database at once:
// the migrations run under an advisory lock. It logs the indexes the
// database keeps for nodes of an earlier release, if any (FinishUpgrade).
// Every session it opens holds the build mark (markSessions).
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.RetryFor <= 0 {
		opts.RetryFor = DefaultRetryFor
	}
	// A send rerun after a lost answer must find its token (send.go).
	opts.RetryFor = min(opts.RetryFor, sendTokenTTL/2)
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.DefaultRegion == "" {
		opts.DefaultRegion = "us-east-1"
	}
	if !baton.ValidRegion(opts.DefaultRegion) {
		return nil, fmt.Errorf("pgstore: %q is not a region name", opts.DefaultRegion)
	}
	cfg, err := poolConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	var backends backendSet
	backends.track(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	s := &Store{pool: pool, backends: &backends, log: opts.Logger, origin: newOrigin(), connCfg: cfg.ConnConfig.Copy(), defaultRegion: opts.DefaultRegion,
		retryFor: opts.RetryFor, connectTimeout: opts.ConnectTimeout}
	s.paced = lograte.NewPaced(opts.Clock, pacedLogEvery)
	s.reads.timeout = opts.RetryFor
	s.groupLocks.init(opts.Logger, s.connCfg, opts.RetryFor)
	s.queues.clock, s.refusals.clock, s.schema.clock = opts.Clock, opts.Clock, opts.Clock
	s.notify.init(s, cfg.ConnConfig, opts.Clock)
	fail := func(err error) (*Store, error) {
		s.bg.stop()
		s.paced.Close()
		pool.Close()
		return nil, err
	}
	if err := s.awaitDatabase(ctx, describe(cfg.ConnConfig), opts.ConnectTimeout); err != nil {
		return fail(err)
	}
	if err := s.awaitSession(ctx, cfg.ConnConfig, describe(cfg.ConnConfig), opts.ConnectTimeout); err != nil {
		return fail(err)
	}
	if err := s.migrate(ctx); err != nil {
		return fail(err)
	}
	if err := s.learnSchema(ctx); err != nil {
		return fail(err)
	}
	s.logKeptIndexes(ctx)
	s.wake.init(s, cfg.ConnConfig)
	s.group.init(s)
	return s, nil
}

// ClockOffset measures how far the database's clock is ahead of now (behind,
// if negative): now plus the offset reads the database's time. Of three
// round trips it takes the shortest, whose midpoint is the best guess of
// when the database read its clock; the error is at most half that trip.
func (s *Store) ClockOffset(ctx context.Context, now func() time.Time) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, s.retryFor) // a hung database fails it at the bound
	defer cancel()
	var best, bestTrip time.Duration
	for i := range 3 {
		var db, before, after time.Time
		err := s.retry(ctx, func(ctx context.Context) error { // a trip that fails is made again, and timed anew
			before = now()
			err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&db)
			after = now()
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("pgstore: read the database's clock: %w", err)
		}
		trip := after.Sub(before)
		if i == 0 || trip < bestTrip {
			best, bestTrip = db.Sub(before.Add(trip/2)), trip
		}
	}
	return best, nil
}

// poolConfig parses url and fills in the pool settings it leaves out.
func poolConfig(url string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	// A keyword/value string may space its '=' ("pool_max_conns = 3").
	compact := strings.Join(strings.Fields(url), "")
	set := func(name string) bool { return strings.Contains(compact, name+"=") }
	if !set("pool_max_conns") {
		cfg.MaxConns = max(defaultMaxConns, int32(2*runtime.GOMAXPROCS(0)))
	}
	if !set("pool_min_conns") {
		cfg.MinConns = min(defaultMinConns, cfg.MaxConns)
	}
	if !set("pool_max_conn_lifetime") {
		cfg.MaxConnLifetime = defaultMaxConnLifetime
	}
	if !set("pool_max_conn_idle_time") {
		cfg.MaxConnIdleTime = defaultMaxConnIdleTime
	}
	if !set("connect_timeout") {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	refuseCancels(cfg)
	markSessions(cfg.ConnConfig)
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "baton"
	}
	return cfg, nil
}

// describe names the database for messages: host, port and database, never
// the password.
func describe(c *pgx.ConnConfig) string {
	return fmt.Sprintf("%s:%d/%s as %s", c.Host, c.Port, c.Database, c.User)
}

// awaitDatabase pings until the database answers or timeout passes,
// backing off between attempts (awaitStart). A refusal is not waited out.
func (s *Store) awaitDatabase(parent context.Context, where string, timeout time.Duration) error {
	return s.awaitStart(parent, timeout, startWait{
		where: where, retrying: "PostgreSQL unreachable, retrying", passed: "PostgreSQL reachable",
		try:   s.pool.Ping,
		retry: func(err error) ([]any, bool) { return nil, refusedAtStart(where, err) == nil },
		end: func(err error, attempts int, _ error, _ bool) error {
			if refused := refusedAtStart(where, err); refused != nil {
				return refused
			}
			if parent.Err() != nil {
				return fmt.Errorf("pgstore: waiting for PostgreSQL at %s: %w (after %d attempts: %v)", where, parent.Err(), attempts, err)
			}
			return fmt.Errorf("pgstore: cannot reach PostgreSQL at %s (gave up after %d attempts in %v): %w", where, attempts, timeout, err)
		},
	})
}

// pause waits d or until ctx ends; it reports whether d passed.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Ping reports whether the database answers and takes writes, and
// completes this node's statements: the server's readiness. Its error says
// what is wrong, for /healthz. A commit that waits for a synchronous
// standby (any node's, on this database) for more than stallAfter fails it,
// as does a run of this node's that waits as long or ran out of its bound,
// and, for a while, an operation the database refused (health.go). A
// pooled connection found dead is not the database down: Ping then asks on
// another (onLiveConn).
func (s *Store) Ping(ctx context.Context) error {
	var standby, readOnly bool
	var syncWait float64
	err := s.onLiveConn(ctx, func(c *pgxpool.Conn) error {
		return c.QueryRow(ctx, `
		SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on',
			coalesce((SELECT extract(epoch FROM max(clock_timestamp() - query_start))::float8 FROM pg_stat_activity
				WHERE wait_event = 'SyncRep' AND datname = current_database()), 0)`).Scan(&standby, &readOnly, &syncWait)
	})
	if timedOut(err) {
		return fmt.Errorf("database not answering: %w", err)
	}
	if what, ok := transient(err); ok {
		return fmt.Errorf("%s: %w", what, err)
	}
	if what, ok := refusalOutage(err); ok {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err != nil {
		return fmt.Errorf("database check failed: %w", err)
	}
	if standby || readOnly {
		// Settings a session took when it connected, or a server since
		// promoted: new sessions may take writes (renewSessions).
		s.renewSessions()
	}
	if standby {
		// A primary demoted by a failover: the nodes' connections must
		// move to the new primary (list every host in the URL with
		// target_session_attrs=read-write).
		return errors.New("database is read-only: connected to a standby")
	}
	if readOnly {
		return errors.New("database is read-only: default_transaction_read_only is on")
	}
	if wait := time.Duration(syncWait * float64(time.Second)); wait > stallAfter {
		return fmt.Errorf("commits not completing: one has waited %v for a synchronous standby", wait.Round(100*time.Millisecond))
	}
	if err := s.refusals.check(); err != nil {
		return err
	}
	return s.runs.check()
}

// Close stops listening for other servers' notifications, ends the
// store's own goroutines (background) and closes the connections, the
// pool's first and then the task locks', so that no move of this server
// commits after another may have taken its tasks over.
func (s *Store) Close() error {
	s.group.stop()
	s.wake.stop()
	s.notify.stop()
	s.bg.stop()
	s.paced.Close()
	s.pool.Close()
	s.closeLocks()
	s.groupLocks.close()
	return nil
}

// ReceiptKey returns the key every server on this database signs receipt
// handles with, creating it on first use, so that a receipt issued by one
// server is honoured by all of them (engine.Config.ReceiptKey).
func (s *Store) ReceiptKey(ctx context.Context) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("pgstore: receipt key: %w", err)
	}
	// DO UPDATE, not DO NOTHING: when another server's insert of the key
	// is not committed yet, this one waits for it and returns the key it
	// committed; a separate read in the same statement would see neither.
	// A rerun after a lost answer returns the key the run before stored.
	var key []byte
	err := s.retry(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `
		INSERT INTO baton_settings (name, value) VALUES ('receipt_key', $1)
		ON CONFLICT (name) DO UPDATE SET name = excluded.name
		RETURNING value`,
			fresh).Scan(&key)
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: receipt key: %w", err)
	}
	return key, nil
}

// inTx runs f in a READ COMMITTED transaction, retried as retry does. The
// FIFO receive relies on READ COMMITTED: each statement sees what committed
// before it began, whatever the database's default isolation.
func (s *Store) inTx(ctx context.Context, f func(context.Context, pgx.Tx) error) error {
	return s.inTxDone(ctx, f, nil)
}

// inTxDone is inTx for a transaction whose rerun, after a run whose
// outcome is unknown (its COMMIT's answer lost), fails in a way that means
// the run before committed: done recognises that failure, which is then a
// success.
func (s *Store) inTxDone(ctx context.Context, f func(context.Context, pgx.Tx) error, done func(error) bool) error {
	return s.inTxOpts(ctx, f, retryOpts{write: true, done: done})
}

// inTxOpts is inTx retried as retryOp does with o.
func (s *Store) inTxOpts(ctx context.Context, f func(context.Context, pgx.Tx) error, o retryOpts) error {
	return s.retryOp(ctx, func(ctx context.Context) error {
		err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
			return f(ctx, tx)
		})
		if err == nil {
			err = s.fault("tx")
		}
		return err
	}, o)
}

// isForeignKeyViolation reports whether err is a reference to a missing
// row: a message for a queue deleted meanwhile.
func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

func newOrigin() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
