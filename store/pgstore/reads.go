package pgstore

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Every request reads its queue's row first, and every receive reads
// whether the queue is FIFO or has message groups: under load, many
// requests at once read the same row. Such reads are shared. The calls for
// one key that arrive while a read of it runs wait for it to end, then
// share one read, run by a goroutine of its own; so a call's answer comes
// from a read that began after the call did, and it sees every write that
// committed before. The database runs one statement for them all, and
// this server one round trip.

// reads shares the reads of concurrent calls with the same key.
type reads struct {
	// timeout bounds one shared read: the store's retry bound
	// (roundTimeout if zero).
	timeout time.Duration
	mu      sync.Mutex
	keys    map[string]*readKey
}

// readKey is the reads of one key: whether one runs, and the next one, to
// be run for the calls that arrived meanwhile (nil if none).
type readKey struct {
	running bool
	next    *readRound
}

// readRound is one shared read and its answer.
type readRound struct {
	done chan struct{}
	val  any
	err  error
}

// do returns the answer of read, run once for the concurrent calls with
// key: read must depend on nothing but key. It runs on a context of its
// own, bounded by r.timeout; a call waits at most until ctx ends.
func (r *reads) do(ctx context.Context, key string, read func(context.Context) (any, error)) (any, error) {
	r.mu.Lock()
	if r.keys == nil {
		r.keys = map[string]*readKey{}
	}
	k := r.keys[key]
	if k == nil {
		k = &readKey{}
		r.keys[key] = k
	}
	if k.next == nil {
		k.next = &readRound{done: make(chan struct{})}
	}
	rd := k.next
	lead := !k.running
	k.running = true
	r.mu.Unlock()
	if lead {
		r.run(key, k, read)
	}
	select {
	case <-rd.done:
		return rd.val, rd.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run runs the next read of key, then hands the one after, if calls
// queued for it meanwhile, to a goroutine of its own.
func (r *reads) run(key string, k *readKey, read func(context.Context) (any, error)) {
	r.mu.Lock()
	rd := k.next
	k.next = nil
	r.mu.Unlock()

	timeout := r.timeout
	if timeout <= 0 {
		timeout = roundTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	rd.val, rd.err = read(ctx)
	if rd.err != nil && ctx.Err() != nil {
		rd.err = fmt.Errorf("%w: %w", errStalled, rd.err)
	}
	cancel()
	close(rd.done)

	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case k.next != nil:
		go r.run(key, k, read)
	default:
		k.running = false
		delete(r.keys, key)
	}
}
