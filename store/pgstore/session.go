package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Two things the store does need a database session that stays its own
// while its connection is open: the connection that LISTENs for the other
// servers' notifications (notify.go), and each task lock, a session-level
// advisory lock (tasklock.go). A pooler between the servers and the
// database that hands a client's statements to whichever server connection
// is free (PgBouncer's pool_mode = transaction or statement) breaks both,
// silently: notifications go to no one, and a lock stays with a pooled
// connection after its holder is gone. So Open checks, before anything
// else, that a notification sent through the pool reaches a LISTEN made on
// a connection of the store's own, and refuses to start when it does not.

// sessionCheckWait is how long Open waits for its own notification: a
// database delivers one in milliseconds.
const sessionCheckWait = 5 * time.Second

// errNoSession is Open's refusal when connections do not keep a session.
var errNoSession = errors.New("connections to the database do not keep their session: " +
	"a notification sent through one did not reach a LISTEN on another within 5s. " +
	"Baton needs LISTEN/NOTIFY and session advisory locks: behind PgBouncer, use pool_mode = session " +
	"for Baton's database (transaction and statement pooling cannot carry them), or connect to PostgreSQL directly")

// checkSession LISTENs on a channel of this store's own, on a connection
// made as the listener's are, notifies it through the pool, and fails with
// errNoSession if the notification does not arrive within
// sessionCheckWait.
func (s *Store) checkSession(parent context.Context, cfg *pgx.ConnConfig) error {
	ctx, cancel := context.WithTimeout(parent, sessionCheckWait+DefaultConnectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return fmt.Errorf("pgstore: check the database session: %w", err)
	}
	defer conn.Close(context.Background())
	channel := "baton_session_check_" + s.origin
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return fmt.Errorf("pgstore: check the database session: LISTEN: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, 'check')`, pgx.QueryExecModeSimpleProtocol, channel); err != nil {
		return fmt.Errorf("pgstore: check the database session: NOTIFY: %w", err)
	}
	wctx, wcancel := context.WithTimeout(ctx, sessionCheckWait)
	defer wcancel()
	note, err := conn.WaitForNotification(wctx)
	switch {
	case err == nil && note.Channel == channel:
		return nil
	case parent.Err() != nil:
		return fmt.Errorf("pgstore: check the database session: %w", parent.Err())
	case err == nil || wctx.Err() != nil:
		return fmt.Errorf("pgstore: %w", errNoSession)
	}
	return fmt.Errorf("pgstore: check the database session: %w", err)
}
