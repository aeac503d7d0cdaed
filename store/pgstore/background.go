package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/lograte"
)

// background runs the goroutines a Store starts apart from any call (the
// read-only re-check, renewSessions; the count of a burst of paced log
// lines, pacedLog), so that Close ends them and waits for them: none
// outlives the store. The zero value is ready for use.
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

// pacedLogEvery is how often, at most, a pacedLog writes a line of a kind.
const pacedLogEvery = 10 * time.Second

// pacedLog writes kinds of log lines that may come many times a second
// (an operation that succeeded after retries, during an outage) as
// lograte paces them: the first of a kind at once, then at most one every
// pacedLogEvery, with the count of those held back since the one before.
// A burst that ends within the interval is not left unsaid: once the
// interval after its first line held back has passed (or the store
// closes), a line gives the count of those held back, if no line of the
// kind has given it meanwhile.
type pacedLog struct {
	limiter *lograte.Limiter
	clock   clock.Clock
	bg      *background

	mu    sync.Mutex
	tails map[string]bool // kinds whose count is due (tail)
}

func newPacedLog(clk clock.Clock, bg *background) *pacedLog {
	return &pacedLog{limiter: lograte.New(clk, pacedLogEvery), clock: clk, bg: bg, tails: map[string]bool{}}
}

// note writes a line of kind key now, by line, if the pace lets it: held
// is the count of those held back since the line before, written at
// since (zero for none). If it does not, the line is counted, and tail
// writes the count of those held back once the interval has passed.
// A nil pacedLog writes every line.
func (p *pacedLog) note(key string, line, tail func(held int, since time.Time)) {
	if p == nil {
		line(0, time.Time{})
		return
	}
	held, since, ok := p.limiter.AdmitSince(key)
	if ok {
		line(held, since)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tails[key] {
		return
	}
	p.tails[key] = p.bg.start(func(ctx context.Context) {
		t := p.clock.NewTimer(pacedLogEvery)
		defer t.Stop()
		select {
		case <-t.C():
		case <-ctx.Done(): // the store closes: say the count now
		}
		p.mu.Lock()
		p.tails[key] = false
		p.mu.Unlock()
		if held, since, ok := p.limiter.Flush(key); ok {
			tail(held, since)
		}
	})
}
