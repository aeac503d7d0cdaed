package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/baton-sqs/baton"
)

// An operation that meets a transient failure runs again: a connection lost
// or refused (the primary restarting or failing over), a server shutting
// down or starting up, a demoted primary refusing writes, a serialization
// failure or a deadlock. It runs again with backoff until it succeeds, fails
// otherwise, or the store's retry bound (Options.RetryFor) or the request's
// deadline passes; then it fails with baton.ErrUnavailable, which clients
// see as 503 ServiceUnavailable and retry.
//
// A failure may leave the outcome unknown: the COMMIT reached the server
// but its answer never came back. Every write this store retries is
// idempotent when run again after such a failure: a send records a token with
// its messages (a rerun meets the token's unique key and knows they were
// stored, even if they have been deleted since), a FIFO send finds its deduplication keys, a delete finds
// the message gone (LeaseGone, which the engine answers as success) and a
// visibility change sets the same end again.

// DefaultRetryFor is how long an operation keeps retrying a transient
// failure by default: long enough for a failover or a restart, short
// enough that a client's own timeout has not passed.
const DefaultRetryFor = 5 * time.Second

// SQLSTATEs after which the operation may run again (PostgreSQL
// documentation, Appendix A, "PostgreSQL Error Codes").
var transientCodes = map[string]string{
	"40001": "serialization failure",
	"40P01": "deadlock",
	"57P01": "database shutting down", // admin_shutdown
	"57P02": "database crashed",       // crash_shutdown
	// cannot_connect_now: PostgreSQL says so starting up, shutting down
	// (a smart or fast shutdown under way), in crash recovery, and before
	// a standby's recovery is consistent; the code alone does not say
	// which, and the message may be in another language.
	"57P03": "database not accepting connections (starting up, shutting down or recovering)",
	"25006": "database is read-only",       // read_only_sql_transaction: a demoted primary
	"53300": "database has no connections", // too_many_connections
	// Set by the operator on the database or the role. The node never
	// cancels a statement itself (it closes the connection), so a
	// cancelled one met the server's statement_timeout (or an operator's
	// pg_cancel_backend); either kind of statement was rolled back.
	"57014": "database cancelled a statement (statement_timeout)", // query_canceled
	"55P03": "database lock wait timed out (lock_timeout)",        // lock_not_available
	// The database ended an idle session: its connection is gone, and the
	// statement sent on it never ran.
	"57P05": "database ended an idle connection (idle_session_timeout)",                              // idle_session_timeout
	"25P03": "database ended an idle transaction's connection (idle_in_transaction_session_timeout)", // idle_in_transaction_session_timeout
}

// SQLSTATEs of a database that answers but cannot do the work, for a
// reason a rerun within the bound would not change and an operator must
// mend: its disk full, this server's login refused, the database gone
// (PostgreSQL documentation, Appendix A). It is an outage all the same:
// the operation fails at once with baton.ErrUnavailable (503, which
// clients retry), not as a fault of the request, and /healthz says so
// while it lasts (refusalWatch). A statement naming a table, function or
// schema that is not there is one only when Baton's schema is missing
// (schema.go).
var refusalOutageCodes = map[string]string{
	"53100": "database disk full",                      // disk_full
	"53000": "database out of resources",               // insufficient_resources
	"53200": "database out of memory",                  // out_of_memory
	"58030": "database I/O error",                      // io_error
	"28P01": "database refused this server's password", // invalid_password
	"28000": "database refused this server's login",    // invalid_authorization_specification
	"42501": "database denied this server permission",  // insufficient_privilege
	"3D000": "database does not exist",                 // invalid_catalog_name
}

// refusalOutage reports whether err is the database refusing the work for
// a reason in refusalOutageCodes, and names it.
func refusalOutage(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return "", false
	}
	what, ok := refusalOutageCodes[pgErr.Code]
	return what, ok
}

// transient reports whether err is a failure after which the operation may
// run again, and names it for /healthz and the logs. A database that does
// not answer is an outage like one that refuses: a connection attempt that
// timed out, as much as one refused, and a run the operation's bound ended
// (errStalled, retry).
func transient(err error) (string, bool) {
	if errors.Is(err, errStalled) {
		return "database not answering", true
	}
	if err == nil || errors.Is(err, context.Canceled) {
		return "", false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if what, ok := transientCodes[pgErr.Code]; ok {
			return what, true
		}
		// Class 08: connection exceptions.
		return "database unreachable", strings.HasPrefix(pgErr.Code, "08")
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		if timedOut(err) {
			return "database not answering", true
		}
		return "database unreachable", true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "", false
	}
	var netErr net.Error
	switch {
	case errors.Is(err, pgconn.ErrConnClosed), pgconn.SafeToRetry(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &netErr),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "database unreachable", true
	}
	return "", false
}

// outcomeUnknown reports whether err may have come after the statement
// committed: a lost connection or a run the bound ended, not a refusal to
// start (a connection never made, a statement never sent).
func outcomeUnknown(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02"
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return false
	}
	_, ok := transient(err)
	return ok && !pgconn.SafeToRetry(err)
}

// isUniqueViolation reports whether err is a duplicate key (23505).
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// unavailable is err after the retries gave up on it.
func unavailable(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", baton.ErrUnavailable, what, err)
}

// retry runs f until it succeeds, fails for a reason that is not
// transient, or the operation's bound passes, backing off between runs with
// jitter. The bound is the store's retry bound (Options.RetryFor) from now,
// or ctx's deadline if sooner; every run of f gets a context that ends at
// the bound, so a database that hangs rather than fails (a frozen primary, a
// commit waiting for a synchronous standby) fails the operation at the
// bound like one that refuses it. The runs' context is not cancelled when
// ctx is: a statement once sent is never abandoned because its caller left
// (pause stops the retries then).
func (s *Store) retry(ctx context.Context, f func(context.Context) error) error {
	return s.retryOp(ctx, f, retryOpts{})
}

// retryWrite is retry for a write, whose failure after the bound says
// whether its outcome is known (see giveUp). done (if not nil) recognises
// the failure of a rerun, after a run whose outcome is unknown (its
// COMMIT's answer lost), that means the run before committed: it is then a
// success.
func (s *Store) retryWrite(ctx context.Context, f func(context.Context) error, done func(error) bool) error {
	return s.retryOp(ctx, f, retryOpts{write: true, done: done})
}

// retryOpts say how retryOp treats an operation.
type retryOpts struct {
	// write: the operation changes something (see retryWrite), and done
	// recognises a rerun's failure that means the run before committed.
	write bool
	done  func(error) bool
	// unboundedRuns: each run may take as long as ctx allows (a schema
	// migration, which may rewrite a large table); only the retries are
	// bounded.
	unboundedRuns bool
}

func (s *Store) retryOp(ctx context.Context, f func(context.Context) error, o retryOpts) error {
	write, done := o.write, o.done
	start := time.Now()
	bound := start.Add(s.retryFor)
	if dl, ok := ctx.Deadline(); ok && dl.Before(bound) {
		bound = dl
	}
	var bctx context.Context
	var cancel context.CancelFunc
	if o.unboundedRuns {
		bctx, cancel = context.WithCancel(ctx)
	} else {
		bctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), bound)
	}
	defer cancel()
	backoff := 10 * time.Millisecond
	unsure := false // a run's outcome is unknown, and no later run learned it
	// The longest the database took to refuse a run of this operation:
	// another run may take as long. The longest, not the last: on a
	// loaded machine one run (a new connection) can take several times
	// another, and a last run started on a short one's time failed for
	// the want of time, its answer hiding the refusals' cause.
	var answeredIn time.Duration
	var refusedAs string // what the last run the database refused was refused as
	for attempt := 1; ; attempt++ {
		end := s.runs.begin()
		began := time.Now()
		err := f(bctx)
		if refused(err) {
			answeredIn = max(answeredIn, time.Since(began))
			refusedAs, _ = transient(err)
		}
		if bctx.Err() != nil && timedOut(err) {
			// The bound passed while the database had the run.
			err = fmt.Errorf("%w: %w", errStalled, err)
		}
		if errors.Is(err, errStalled) && s.pool != nil {
			// The pool's other connections are likely to the same server,
			// which hangs: each would cost a run its bound. Close them
			// (those in use once released), so that new ones find the
			// database, or the next host of the URL.
			s.pool.Reset()
		}
		end()
		if isReadOnly(err) {
			s.renewSessions()
		}
		if unsure && err != nil && done != nil && done(err) {
			err = nil
		}
		unsure = write && (unsure || outcomeUnknown(err)) && err != nil
		what, again := transient(err)
		if !again {
			if undefinedObject(err) {
				var outage bool
				if what, outage, err = s.undefinedObjectOutage(bctx, err); outage {
					return s.giveUp(what, err, attempt, start, unsure)
				}
			}
			if what, ok := refusalOutage(err); ok {
				return s.giveUp(what, err, attempt, start, unsure)
			}
			if err == nil && attempt > 1 {
				s.logRetried(attempt, time.Since(start))
			}
			return err
		}
		what = besideRefusals(what, refusedAs)
		// A run that starts too near the bound to be answered before it
		// fails only for the want of time: its failure would hide this
		// one's cause, and read as a database not answering. So the last
		// run starts while there is time left for it (what the last
		// refused run took and half as much again, for a loaded machine,
		// and a margin), the pause shortened to let it.
		need := answeredIn + answeredIn/2 + runMargin
		left := time.Until(bound)
		if left <= need {
			return s.giveUp(what, err, attempt, start, unsure)
		}
		d := min(backoff/2+time.Duration(mathrand.Int64N(int64(backoff))), left-need)
		backoff = min(2*backoff, time.Second)
		if !pause(ctx, d) {
			return s.giveUp(what, err, attempt, start, unsure)
		}
	}
}

// besideRefusals is what of the run that ends the retries, with what the
// last run the database refused before it was refused as, when that
// differs: on a loaded machine the last run of a database refusing every
// one (read-only) can be cut by the bound instead, and "not answering"
// alone would hide the cause.
func besideRefusals(what, refusedAs string) string {
	if refusedAs == "" || refusedAs == what {
		return what
	}
	return what + "; an earlier run was refused: " + refusedAs
}

// retriedKey is the kind of the paced lines (Store.paced) of operations
// that succeeded after retries.
const retriedKey = "succeeded after retries"

// logRetried logs an operation that succeeded after attempts runs, after
// so long. A connection limit or a restart may make every operation of a
// node so: the first line is written at once, then at most one every
// pacedLogEvery with the count since the line before, and a burst's count
// once the interval ends (lograte.Paced).
func (s *Store) logRetried(attempts int, after time.Duration) {
	s.paced.Note(retriedKey, func(held int, since time.Time) {
		attrs := []any{"attempts", attempts, "after", after.Round(time.Millisecond)}
		if held > 0 {
			attrs = append(attrs, "more_succeeded_so", held, "since", since.UTC().Format(time.RFC3339))
		}
		s.log.Info("PostgreSQL operation succeeded after retries", attrs...)
	}, func(held int, since time.Time) {
		s.log.Info("PostgreSQL operations succeeded after retries", "count", held, "since", since.UTC().Format(time.RFC3339))
	})
}

// A session takes default_transaction_read_only (set on the database or
// the role) when it connects, and keeps it: an operator who sets it back
// to off, or a standby promoted meanwhile, leaves the pool's connections
// refusing every change until they are replaced, up to their lifetime
// (30 minutes) under load. So a refusal for read-only (an operation's or
// Ping's) has a new session asked, at most once every renewSessionsEvery
// and apart from the operation, whether it would take writes; if it
// would, the pool's connections are closed (those in use once released),
// and the next runs connect afresh. While new sessions are read-only too,
// the pool is left alone: an operation's runs keep the connections whose
// refusals time its last run (retryOp).
const renewSessionsEvery = time.Second

// sessionRenewal paces renewSessions.
type sessionRenewal struct {
	mu      sync.Mutex
	last    time.Time
	probing bool
}

// renewSessions starts the check of a new session (renewIfWritable),
// unless one runs or started within renewSessionsEvery.
func (s *Store) renewSessions() {
	if s.pool == nil || s.connCfg == nil {
		return
	}
	now := time.Now()
	r := &s.renewal
	r.mu.Lock()
	if r.probing || (!r.last.IsZero() && now.Sub(r.last) < renewSessionsEvery) {
		r.mu.Unlock()
		return
	}
	r.last, r.probing = now, true
	r.mu.Unlock()
	// Close ends the check and waits for it: it holds a connection of its
	// own, and may wait up to the retry bound for a database that hangs.
	started := s.bg.start(func(ctx context.Context) {
		s.renewIfWritable(ctx)
		r.mu.Lock()
		r.probing = false
		r.mu.Unlock()
	})
	if !started {
		r.mu.Lock()
		r.probing = false
		r.mu.Unlock()
	}
}

// renewIfWritable connects a new session and, if it takes writes, closes
// the pool's connections. It gives up at the retry bound, or when ctx
// ends (the store closes).
func (s *Store) renewIfWritable(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.retryFor)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	var readOnly bool
	if err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'`).Scan(&readOnly); err != nil || readOnly {
		return
	}
	s.log.Info("PostgreSQL takes writes on a new session while this server's sessions are read-only (default_transaction_read_only set back, or a standby promoted): its connections are made again")
	s.pool.Reset()
}

// isReadOnly reports whether err is a change refused as read-only (25006).
func isReadOnly(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "25006"
}

// runMargin is the least time left before the bound in which a run is
// started, beyond what the database may take to refuse it (see retryOp).
const runMargin = 50 * time.Millisecond

// pacedLogEvery is how often, at most, a line of a kind is written by
// Store.paced: of one problem's giving up, of successes after retries, of
// the LISTEN connection's losses.
const pacedLogEvery = 10 * time.Second

// errOutcomeUnknown is what a client is told of a write whose commit was
// sent but not confirmed within the bound: it may have been made.
var errOutcomeUnknown = &baton.Error{Code: baton.ErrServiceUnavailable,
	Message: "The service is unavailable: the database did not confirm the change in time, so it may or may not have been made. Please try again shortly."}

// giveUp logs and returns the transient failure err that persisted:
// baton.ErrUnavailable, which clients see as 503 ServiceUnavailable. A
// write whose outcome is unknown (unsure) says so in its message
// (errOutcomeUnknown); any other such answer means the call was not
// carried out (docs/postgresql.md).
//
// The log line is written for the first failure of each problem, then at
// most once every pacedLogEvery with the count of those not written since
// the last, and when that was, and a burst's count once the interval ends
// (lograte.Paced): during an outage every request may fail so.
func (s *Store) giveUp(what string, err error, attempts int, start time.Time, unsure bool) error {
	s.refusals.saw(what, err)
	s.paced.Note(fmt.Sprint("gave up: ", what, unsure), func(held int, since time.Time) {
		attrs := []any{"problem", what, "attempts", attempts,
			"after", time.Since(start).Round(time.Millisecond), "outcome_unknown", unsure, "err", err}
		if held > 0 {
			attrs = append(attrs, "more_failed_so", held, "since", since.UTC().Format(time.RFC3339))
		}
		msg := "PostgreSQL operation failed after retries"
		if attempts == 1 {
			msg = "PostgreSQL operation failed" // a refusal, not run again
		}
		s.log.Warn(msg, attrs...)
	}, func(held int, since time.Time) {
		s.log.Warn("PostgreSQL operations failed", "problem", what, "outcome_unknown", unsure,
			"count", held, "since", since.UTC().Format(time.RFC3339))
	})
	if unsure {
		return fmt.Errorf("%w: %w: %s: %w", baton.ErrUnavailable, errOutcomeUnknown, what, err)
	}
	return unavailable(what, err)
}

// fault, if set (by tests), runs after each write that succeeded: its
// error stands for the answer lost on the way back.
func (s *Store) fault(op string) error {
	if s.faultHook == nil {
		return nil
	}
	return s.faultHook(op)
}
