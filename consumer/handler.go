package consumer

import (
	"context"
	"errors"
)

// Handler does the work for one message. Its return value is the message's
// outcome (see Retry, NotReady, Permanent, Drop: nil deletes the message,
// any other error retries it per the RetryPolicy). The context is cancelled
// with ErrLeaseLost, ErrStalled, ErrAttemptTimeout or ErrShutdown (read it
// with context.Cause) when the runtime ends the attempt; a handler should
// return soon after.
type Handler interface {
	// Handle works on one message; its result is the outcome.
	Handle(ctx context.Context, d *Delivery) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, d *Delivery) error

// Handle calls f(ctx, d).
func (f HandlerFunc) Handle(ctx context.Context, d *Delivery) error { return f(ctx, d) }

// BatchHandler works on up to WithBatchSize messages from one receive at
// once and returns one result per message, in order: result i is the
// outcome of batch[i], read as a Handler's return value. A nil slice means
// every message succeeded; a slice of the wrong length fails them all. On a
// FIFO queue a failure also fails the later messages of the same group in
// the batch (they are released to keep the group's order), as Lambda does;
// see the package documentation on the receives this spends.
type BatchHandler interface {
	// HandleBatch works on a batch; result i is the outcome of batch[i].
	HandleBatch(ctx context.Context, batch []*Delivery) []error
}

// BatchHandlerFunc adapts a function to BatchHandler.
type BatchHandlerFunc func(ctx context.Context, batch []*Delivery) []error

// HandleBatch calls f(ctx, batch).
func (f BatchHandlerFunc) HandleBatch(ctx context.Context, batch []*Delivery) []error {
	return f(ctx, batch)
}

// FailAll returns a result slice that fails all n messages with err.
func FailAll(n int, err error) []error { return repeatErr(n, err) }

// errBatchResult fails a batch whose handler returned the wrong number of
// results.
var errBatchResult = errors.New("consumer: batch handler returned the wrong number of results")

// Middleware wraps a Handler, for example with Idempotency.
type Middleware func(Handler) Handler

// Chain wraps h in mw; the first middleware is the outermost.
func Chain(h Handler, mw ...Middleware) Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}
