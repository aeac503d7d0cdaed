package pgstore

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The store never asks PostgreSQL to cancel a statement. When a statement
// outlives its context, the driver closes the connection and, first, sends
// a cancel request; a cancel that reaches a COMMIT waiting for a
// synchronous standby ends the wait and leaves the transaction committed on
// the primary alone ("canceling wait for synchronous replication due to
// user request"), which a failover may then lose: a change the client was
// told failed would be visible, and one it was told succeeded could be
// lost with it. Without the cancel, the closed connection's commit
// completes, or not, as the database decides, with the standby's
// acknowledgement; the client was told its outcome is unknown (retry.go).
// A statement whose caller left runs to its end, and the store's
// statements are short.
//
// The pool's connections dial through a gate of their own, which refuses
// every dial once its connection is established: the only later dial is a
// cancel request's.

// errCancelRefused is the failure of a cancel request's dial.
var errCancelRefused = errors.New("pgstore: cancel requests are not sent (a cancelled commit would be kept on the primary alone)")

// refuseCancels makes the connections of a pool made with cfg send no
// cancel requests.
func refuseCancels(cfg *pgxpool.Config) {
	cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		g := &dialGate{dial: cc.DialFunc}
		cc.DialFunc = g.dialContext
		return nil
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		nc := c.PgConn().Conn()
		if tc, ok := nc.(*tls.Conn); ok {
			nc = tc.NetConn()
		}
		if gc, ok := nc.(*gatedConn); ok {
			gc.gate.connected.Store(true)
		}
		return nil
	}
}

// dialGate dials one connection's network connections: those of its
// connection attempts (several hosts, TLS then not), until it is
// connected, then none.
type dialGate struct {
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	connected atomic.Bool
}

func (g *dialGate) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if g.connected.Load() {
		return nil, errCancelRefused
	}
	c, err := g.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, gate: g}, nil
}

// gatedConn is a network connection its gate dialled, so that the gate can
// be found from the established connection.
type gatedConn struct {
	net.Conn
	gate *dialGate
}
