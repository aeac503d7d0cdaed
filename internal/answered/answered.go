// Package answered writes an HTTP answer within a bound and says whether
// it went out to the client's connection: the server tells the lease
// ledger of a receive's answer that did not (its leases are held by no
// one), and so does the proxy.
//
// What can be known is what the server's side of the connection saw. An
// answer that fits in the connection's buffers is written whole even to a
// client that has just closed its socket, and no error comes of it; one
// that does not, or one written after the request's context ended (Go's
// server ends it when it reads the client's close), did not reach it.
//
// A peer that stops reading without closing (its host gone, a network
// cut: nothing reads, nothing resets) would hold the write of an answer
// larger than those buffers until TCP gives up, some fifteen minutes, and
// one that is there but reads nothing for ever. So each piece of an
// answer must go out within Patience: the answer of a peer that stalled
// fails within seconds of the stall, whatever its size, and a slow
// peer's goes on for as long as it keeps reading.
package answered

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Patience is how long a piece of an answer (at most piece bytes, or the
// flush of what is left) may take to go out before its write fails.
const Patience = 10 * time.Second

// piece is how much of an answer is written under one deadline: 64 KiB in
// Patience is 6.4 KiB/s, below any link a queue's client is on.
const piece = 64 << 10

// Write writes an answer to w by write, flushing it to the connection,
// each piece within Patience, and returns why it did not reach the
// client, nil if it went out: the request's context had ended before it
// was written (the client closed its connection, or reset its stream), or
// writing or flushing it failed (the connection closed or cut while it
// was written, or the peer read too little of it in time). The deadline
// is set only once the answer is ready, after any long poll's wait, and
// is lifted once it went out, for the connection's next request. A writer
// that cannot flush leaves the answer to the server's own flush, unseen;
// one without deadlines (a recorder) writes without a bound.
func Write(ctx context.Context, w http.ResponseWriter, write func(http.ResponseWriter)) error {
	return WriteThen(ctx, w, write, nil)
}

// WriteThen is Write, calling written (if not nil) once the answer is
// written whole, before the flush that sends its last bytes: what it
// records is recorded before the client can have read the whole answer
// (and so before its next request, on any connection). A flush that then
// fails (the connection known broken) still makes WriteThen fail.
func WriteThen(ctx context.Context, w http.ResponseWriter, write func(http.ResponseWriter), written func()) error {
	cw := bound(w)
	if ctx.Err() != nil {
		write(cw)
		return fmt.Errorf("the client had left before the answer was written: %w", context.Cause(ctx))
	}
	write(cw)
	if cw.err != nil {
		return cw.err
	}
	if written != nil {
		written()
	}
	return cw.FlushError()
}

// Handler serves h with every write and flush of its answers bounded as
// Write bounds an answer's (each piece within Patience, the deadline
// lifted once it went out, so a stream's quiet between two events is no
// stall), and what is left of an answer longer than net/http holds back
// flushed within Patience once h returns: a peer that stopped reading
// holds the handler seconds, whatever it serves (a page, a profile, a
// stream of events), and what the handler holds (a slot, a lock, the
// answer) is let go. A write or flush that failed fails again at each
// call, so a stream's next event ends it. An answer of at most unchunked
// bytes is left to the server's own flush: it fits any connection's
// buffers, and so keeps the Content-Length net/http gives it.
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := bound(w)
		h.ServeHTTP(cw, r)
		if cw.written > unchunked {
			_ = cw.FlushError() // its error is the connection's, which net/http closes
		}
	})
}

// unchunked is how much of an answer net/http holds back before writing
// its header, to give a whole answer that fits a Content-Length (its
// bufferBeforeChunkingSize).
const unchunked = 2048

// bound is w with its writes bounded: w itself when Handler bounds it
// already.
func bound(w http.ResponseWriter) *checked {
	if cw, ok := w.(*checked); ok {
		return cw
	}
	return &checked{ResponseWriter: w}
}

// setDeadline sets the write deadline of w's connection (stream, for
// HTTP/2); the zero time lifts it. A writer without one is left as it is.
// A socket's deadline is in the system's time, not a clock.Clock's. (Not
// http.ResponseController's, whose error for a writer without one is
// made anew at each call.)
func setDeadline(w http.ResponseWriter, t time.Time) {
	for {
		switch x := w.(type) {
		case interface{ SetWriteDeadline(time.Time) error }:
			_ = x.SetWriteDeadline(t) // its error is the next write's
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}

// flush flushes w to its connection; a writer that cannot flush is no
// error (as setDeadline, without http.ResponseController's allocation).
func flush(w http.ResponseWriter) error {
	for {
		switch x := w.(type) {
		case interface{ FlushError() error }:
			return x.FlushError()
		case http.Flusher:
			x.Flush()
			return nil
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}

// checked writes an answer a piece at a time, each within Patience, and
// keeps the first error a write or flush returned.
type checked struct {
	http.ResponseWriter
	err     error
	written int
}

func (c *checked) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	defer setDeadline(c.ResponseWriter, time.Time{})
	written := 0
	for len(p) > 0 {
		n := min(len(p), piece)
		setDeadline(c.ResponseWriter, time.Now().Add(Patience))
		m, err := c.ResponseWriter.Write(p[:n])
		written += m
		c.written += m
		if err != nil {
			c.err = err
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// FlushError flushes what is buffered to the connection within Patience
// (http.ResponseController finds it before Unwrap).
func (c *checked) FlushError() error {
	if c.err != nil {
		return c.err
	}
	setDeadline(c.ResponseWriter, time.Now().Add(Patience))
	defer setDeadline(c.ResponseWriter, time.Time{})
	c.err = flush(c.ResponseWriter)
	return c.err
}

// Flush is FlushError for a handler that asks for an http.Flusher.
func (c *checked) Flush() { _ = c.FlushError() }

// Unwrap lets http.ResponseController reach the writer underneath.
func (c *checked) Unwrap() http.ResponseWriter { return c.ResponseWriter }
