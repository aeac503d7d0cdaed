package worker

import (
	"context"
	"sync"
)

// gatherer forms batches across receives when there is a batching window.
// One batch is open at a time; it is sealed when it is full, when the next
// message would take it past MaxPayload, when its window (from its first
// message) ends, or at shutdown. A sealed batch waits for a free
// invocation, then is delivered. Until then each of its messages can be
// withdrawn by its call (the consumer cancelled the call: shutdown, lost
// leases); once it has started, its messages can only be stopped with it.
//
// Lock order: gatherer.mu, then call.mu.
type gatherer struct {
	w *Worker

	mu     sync.Mutex
	open   *batch
	closed bool
}

// batch is one event in the making.
type batch struct {
	items  []*item
	size   int
	sealed chan struct{}
	once   sync.Once

	// Guarded by gatherer.mu.
	started bool
	cancel  context.CancelCauseFunc
}

func newGatherer(w *Worker) *gatherer { return &gatherer{w: w} }

// add puts a call's messages into batches.
func (g *gatherer) add(c *call) {
	w := g.w
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, it := range c.items {
		if it.rec == nil {
			continue // failed to encode; settled already
		}
		grow := len(it.rec)
		if g.open != nil && len(g.open.items) > 0 {
			grow++
			if g.open.size+grow > w.cfg.MaxPayload {
				g.sealLocked()
				grow = len(it.rec)
			}
		}
		if g.open == nil {
			g.open = &batch{size: eventOverhead, sealed: make(chan struct{})}
			g.startWindow(g.open)
		}
		b := g.open
		b.items = append(b.items, it)
		b.size += grow
		it.b = b
		if len(b.items) >= w.cfg.BatchSize {
			g.sealLocked()
		}
	}
	if g.closed && g.open != nil {
		g.sealLocked()
	}
}

// startWindow seals b when its window ends, if nothing sealed it before.
func (g *gatherer) startWindow(b *batch) {
	w := g.w
	t := w.clock.NewTimer(w.cfg.BatchingWindow)
	if !w.spawn(func() {
		defer t.Stop()
		select {
		case <-t.C():
			g.mu.Lock()
			if g.open == b {
				g.sealLocked()
			}
			g.mu.Unlock()
		case <-b.sealed:
		case <-w.bg.Done():
		}
	}) {
		t.Stop()
	}
}

// sealLocked seals the open batch and sends it on its way.
func (g *gatherer) sealLocked() {
	b := g.open
	g.open = nil
	b.once.Do(func() { close(b.sealed) })
	if !g.w.spawn(func() { g.dispatch(b) }) {
		// The worker has stopped: nothing will deliver the batch.
		b.started = true
		for _, it := range b.items {
			it.c.settle(it.idx, context.Canceled)
		}
	}
}

// close seals the open batch and makes every later call's messages a
// batch of their own, delivered at once: the worker is shutting down.
func (g *gatherer) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.open != nil {
		g.sealLocked()
	}
}

// dispatch waits for a free invocation and delivers the batch's messages
// that were not withdrawn.
func (g *gatherer) dispatch(b *batch) {
	w := g.w
	select {
	case <-w.slots:
	case <-w.bg.Done():
		g.mu.Lock()
		b.started = true
		g.mu.Unlock()
		for _, it := range b.items {
			it.c.settle(it.idx, context.Canceled)
		}
		return
	}
	defer func() { w.slots <- struct{}{} }()
	ctx, cancel := context.WithCancelCause(w.bg)
	defer cancel(nil)
	g.mu.Lock()
	var live []*item
	for _, it := range b.items {
		if !it.withdrawn {
			live = append(live, it)
		}
	}
	b.started, b.cancel = true, cancel
	g.mu.Unlock()
	if len(live) == 0 {
		return
	}
	res := w.invoke(ctx, live)
	for i, it := range live {
		it.c.settle(it.idx, res[i])
	}
}

// withdraw takes the call's messages out of the batches that have not
// started, settling them with cause, and returns the started batches that
// hold its other messages.
func (g *gatherer) withdraw(c *call, cause error) []*batch {
	g.mu.Lock()
	defer g.mu.Unlock()
	var running []*batch
	seen := map[*batch]bool{}
	for _, it := range c.items {
		switch {
		case it.b == nil:
		case !it.b.started:
			it.withdrawn = true
			c.settle(it.idx, cause)
		case !seen[it.b]:
			seen[it.b] = true
			running = append(running, it.b)
		}
	}
	return running
}

// stop cancels a started batch's delivery with cause.
func (b *batch) stop(cause error) {
	if b.cancel != nil {
		b.cancel(cause)
	}
}
