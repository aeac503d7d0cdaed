package pgstore

import (
	"context"
	"sync"
)

// background runs the goroutines a Store starts apart from any call (the
// read-only re-check, renewSessions), so that Close ends them and waits
// for them: none outlives the store. The zero value is ready for use.
type background struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	closed bool
	wg     sync.WaitGroup
}

// start runs f in a goroutine of its own with a context that ends when
// the store closes. It reports false, and runs nothing, once the store is
// closed.
func (b *background) start(f func(ctx context.Context)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithCancel(context.Background())
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f(b.ctx)
	}()
	return true
}

// stop ends the goroutines' context and waits for them to return.
func (b *background) stop() {
	b.mu.Lock()
	b.closed = true
	if b.cancel != nil {
		b.cancel()
	}
	b.mu.Unlock()
	b.wg.Wait()
}
