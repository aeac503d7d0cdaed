package memstore

import (
	"context"
	"fmt"

	"github.com/baton-sqs/baton"
)

// groupTurns are a Cluster's group locks (baton.GroupLocker): a key's
// channel holds a token while a handle holds the key, and holders names
// that handle. Guarded by Cluster.mu, except the wait for a token.
type groupTurns struct {
	ch      map[string]chan struct{}
	holders map[string]*groupTurn
}

// groupTurn is one held lock.
type groupTurn struct{ h *Shared }

// GroupLock waits for the lock named key, until ctx ends.
func (h *Shared) GroupLock(ctx context.Context, key string) (func(), error) {
	c := h.c
	c.mu.Lock()
	if c.turns.ch == nil {
		c.turns.ch = make(map[string]chan struct{})
		c.turns.holders = make(map[string]*groupTurn)
	}
	ch := c.turns.ch[key]
	if ch == nil {
		ch = make(chan struct{}, 1)
		c.turns.ch[key] = ch
	}
	c.mu.Unlock()
	select {
	case ch <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("memstore: group lock: %w: %w", baton.ErrUnavailable, ctx.Err())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.closed {
		<-ch
		return nil, fmt.Errorf("memstore: group lock: %w", errClosed)
	}
	turn := &groupTurn{h: h}
	c.turns.holders[key] = turn
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.turns.holders[key] == turn {
			delete(c.turns.holders, key)
			<-ch
		}
	}, nil
}

// drop frees the locks h holds, as its server dies.
func (t *groupTurns) drop(h *Shared) {
	for key, turn := range t.holders {
		if turn.h == h {
			delete(t.holders, key)
			<-t.ch[key]
		}
	}
}
