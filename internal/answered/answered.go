// Package answered writes an HTTP answer and says whether it went out to
// the client's connection: the server tells the lease ledger of a
// receive's answer that did not (its leases are held by no one), and so
// does the proxy.
//
// What can be known is what the server's side of the connection saw. An
// answer that fits in the connection's buffers is written whole even to a
// client that has just closed its socket, and no error comes of it; one
// that does not, or one written after the request's context ended (Go's
// server ends it when it reads the client's close), did not reach it.
package answered

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Write writes an answer to w by write, flushing it to the connection,
// and returns why it did not reach the client, nil if it went out: the
// request's context had ended before it was written (the client closed
// its connection, or reset its stream), or writing or flushing it failed
// (the connection closed or cut while it was written). A writer that
// cannot flush leaves the answer to the server's own flush, unseen.
func Write(ctx context.Context, w http.ResponseWriter, write func(http.ResponseWriter)) error {
	if ctx.Err() != nil {
		write(w)
		return fmt.Errorf("the client had left before the answer was written: %w", context.Cause(ctx))
	}
	cw := &checked{ResponseWriter: w}
	write(cw)
	if cw.err != nil {
		return cw.err
	}
	if err := http.NewResponseController(w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// checked keeps the first error a write of the answer returned.
type checked struct {
	http.ResponseWriter
	err error
}

func (c *checked) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (c *checked) Unwrap() http.ResponseWriter { return c.ResponseWriter }
