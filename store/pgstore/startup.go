package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/baton-sqs/baton"
)

// At start, Open waits for the database (awaitDatabase) and then checks that
// its connections keep their session (checkSession, run by awaitSession);
// a server then reads the database's clock (AwaitClockOffset). Each may
// meet a database, or a way to it, not settled yet: a server starting up,
// a database not created yet, or a load balancer that counted a standby up
// until its checks failed and then cut the connections it had sent there
// (HAProxy's on-marked-down shutdown-sessions, docs/deploy-three-hosts.md).
// Each retries, with back-off and a log line per attempt, for up to
// Options.ConnectTimeout (awaitStart). A definite refusal is not retried:
// waiting would not change it, so Open fails at once with the database's
// reason. That is a wrong password, a role that may not log in or a
// missing permission (refusalCodes) while waiting for the database, and
// any failure that is not transient (retry.go) in the session check, such
// as a pooler that does not keep sessions (errNoSession).

// refusalCodes are the SQLSTATEs of a connection refused for good
// (PostgreSQL documentation, Appendix A). A database that does not exist
// (3D000) is not one: one created after its server started is waited for.
var refusalCodes = map[string]bool{
	"28P01": true, // invalid_password
	"28000": true, // invalid_authorization_specification: no pg_hba.conf entry, no such role, or a role that may not log in
	"42501": true, // insufficient_privilege: no CONNECT on the database
}

// refusedAtStart returns the error Open fails with when err, met while
// waiting for the database at where, is a refusal waiting will not change;
// nil otherwise.
func refusedAtStart(where string, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || !refusalCodes[pgErr.Code] {
		return nil
	}
	return fmt.Errorf("pgstore: PostgreSQL at %s refused the connection: %w", where, err)
}

// awaitSession runs checkSession until it passes, fails for a reason that is
// not transient, or timeout passes, backing off between attempts.
func (s *Store) awaitSession(parent context.Context, cfg *pgx.ConnConfig, where string, timeout time.Duration) error {
	return s.awaitStart(parent, timeout, startWait{
		where: where, retrying: "PostgreSQL session check failed, retrying", passed: "PostgreSQL session check passed",
		try: func(ctx context.Context) error { return s.checkSession(ctx, cfg) },
		retry: func(err error) ([]any, bool) {
			what, again := transient(err)
			return []any{"problem", what}, again
		},
		end: func(err error, attempts int, last error, timedOut bool) error {
			switch {
			case parent.Err() != nil && !errors.Is(err, parent.Err()):
				return fmt.Errorf("pgstore: check the database session: %w (after %d attempts: %v)", parent.Err(), attempts, err)
			case timedOut && last != nil:
				return fmt.Errorf("%w (gave up after %d attempts in %v)", last, attempts, timeout)
			}
			return err // a refusal, or the caller's end
		},
	})
}

// startWait is one of Open's waits for the database (awaitStart).
type startWait struct {
	// where names the database, for the log.
	where string
	// retrying is the log line of an attempt that failed and is retried;
	// passed, of one that passed after others failed.
	retrying, passed string
	// try is one attempt; its context ends when the wait does.
	try func(ctx context.Context) error
	// retry says whether a failure is waited out, and what to add to its
	// log line.
	retry func(err error) (attrs []any, ok bool)
	// end is the error of a wait that did not pass: err is the last
	// attempt's failure, last the last one waited out (nil if none), and
	// timedOut says the wait's timeout passed (rather than the caller
	// leaving, or a failure not waited out).
	end func(err error, attempts int, last error, timedOut bool) error
}

// awaitStart runs w.try until it passes, fails in a way w.retry does not
// wait out, or timeout (or parent) ends the wait. Between attempts it backs
// off, from 100 ms doubling up to 5 s, with a log line for each.
func (s *Store) awaitStart(parent context.Context, timeout time.Duration, w startWait) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	backoff := 100 * time.Millisecond
	var last error
	for attempt := 1; ; attempt++ {
		err := w.try(ctx)
		if err == nil {
			if attempt > 1 {
				s.log.Info(w.passed, "db", w.where, "attempts", attempt)
			}
			return nil
		}
		attrs, again := w.retry(err)
		if again && ctx.Err() == nil {
			last = err
			line := append([]any{"db", w.where}, attrs...)
			s.log.Warn(w.retrying, append(line, "attempt", attempt, "retry_in", backoff, "err", err)...)
			if pause(ctx, backoff) {
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
		}
		return w.end(err, attempt, last, parent.Err() == nil && ctx.Err() != nil)
	}
}

// AwaitClockOffset is ClockOffset as a server's start needs it: a reading
// the database is unavailable for is made again, with back-off and a log
// line each time, for up to Options.ConnectTimeout, as Open waits for the
// database. A server that keeps the database's time must know its offset
// before it serves (internal/cli/clocksync.go).
func (s *Store) AwaitClockOffset(ctx context.Context, now func() time.Time) (time.Duration, error) {
	where := describe(s.connCfg)
	var off time.Duration
	err := s.awaitStart(ctx, s.connectTimeout, startWait{
		where: where, retrying: "could not read the database's clock, retrying", passed: "read the database's clock",
		try: func(ctx context.Context) (err error) {
			off, err = s.ClockOffset(ctx, now)
			return err
		},
		retry: func(err error) ([]any, bool) { return nil, errors.Is(err, baton.ErrUnavailable) },
		end: func(err error, attempts int, _ error, timedOut bool) error {
			if timedOut {
				return fmt.Errorf("pgstore: cannot read the clock of PostgreSQL at %s (gave up after %d attempts in %v): %w", where, attempts, s.connectTimeout, err)
			}
			return err
		},
	})
	return off, err
}
