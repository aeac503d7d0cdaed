package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

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
	"57P01": "database shutting down",      // admin_shutdown
	"57P02": "database crashed",            // crash_shutdown
	"57P03": "database starting up",        // cannot_connect_now
	"25006": "database is read-only",       // read_only_sql_transaction: a demoted primary
	"53300": "database has no connections", // too_many_connections
}

// transient reports whether err is a failure after which the operation may
// run again, and names it for /healthz and the logs.
func transient(err error) (string, bool) {
	if errors.Is(err, errStalled) {
		return "database not answering", true
	}
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
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
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.Is(err, pgconn.ErrConnClosed), pgconn.SafeToRetry(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &netErr),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "database unreachable", true
	}
	return "", false
}

// outcomeUnknown reports whether err may have come after the statement
// committed: a lost connection, not a refusal to start.
func outcomeUnknown(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02"
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
// transient, or the retry bound or ctx's deadline passes, backing off
// between runs with jitter.
func (s *Store) retry(ctx context.Context, f func() error) error {
	start := time.Now()
	backoff := 10 * time.Millisecond
	var last error // the last transient failure
	lastWhat := ""
	for attempt := 1; ; attempt++ {
		err := f()
		what, again := transient(err)
		if !again {
			switch {
			case err != nil && last != nil && ctx.Err() != nil:
				// The deadline passed during a rerun: the failure is the
				// one that made it rerun.
				err = s.giveUp(lastWhat, last, attempt, start)
			case err == nil && attempt > 1:
				s.log.Info("PostgreSQL operation succeeded after retries", "attempts", attempt, "after", time.Since(start).Round(time.Millisecond))
			}
			return err
		}
		last, lastWhat = err, what
		left := s.retryFor - time.Since(start)
		if dl, ok := ctx.Deadline(); ok {
			left = min(left, time.Until(dl))
		}
		if left <= 0 {
			return s.giveUp(what, err, attempt, start)
		}
		d := min(backoff/2+time.Duration(mathrand.Int64N(int64(backoff))), left)
		backoff = min(2*backoff, time.Second)
		if !pause(ctx, d) {
			return s.giveUp(what, err, attempt, start)
		}
	}
}

// retryDone is retry for an f whose rerun, after a run whose outcome is
// unknown (its COMMIT's answer lost), fails in a way that means the run
// before committed: done (if not nil) recognises that failure, which is
// then a success.
func (s *Store) retryDone(ctx context.Context, f func() error, done func(error) bool) error {
	unsure := false
	return s.retry(ctx, func() error {
		err := f()
		if unsure && err != nil && done != nil && done(err) {
			return nil
		}
		unsure = unsure || outcomeUnknown(err)
		return err
	})
}

// giveUp logs and returns the transient failure err that persisted.
func (s *Store) giveUp(what string, err error, attempts int, start time.Time) error {
	s.log.Warn("PostgreSQL operation failed after retries", "problem", what, "attempts", attempts,
		"after", time.Since(start).Round(time.Millisecond), "err", err)
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
