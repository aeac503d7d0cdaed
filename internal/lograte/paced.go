package lograte

import (
	"context"
	"sync"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// Paced writes kinds of log lines as a Limiter paces them, and leaves no
// burst's count unsaid: when lines of a kind are held back, a line gives
// their count once the interval after the kind's last line written has
// passed (or at Close), unless a line of the kind has given it meanwhile.
// Without it, a burst that ends within an interval (an outage of a few
// seconds) would be counted only by the next line of its kind, which may
// come hours later, or never.
//
// It is safe for concurrent use. The count of each kind is said by a
// goroutine that ends once it has said it; Close says those due at once
// and waits for them, so that no line is written after it.
type Paced struct {
	limiter *Limiter
	clock   clock.Clock
	ctx     context.Context // ends at Close
	stop    context.CancelFunc

	mu     sync.Mutex
	closed bool
	tails  map[string]bool // kinds whose count a goroutine will say
	wg     sync.WaitGroup
}

// NewPaced returns a Paced that writes a line of each kind at most once
// every every, by clk's time.
func NewPaced(clk clock.Clock, every time.Duration) *Paced {
	ctx, stop := context.WithCancel(context.Background())
	return &Paced{limiter: New(clk, every), clock: clk, ctx: ctx, stop: stop, tails: map[string]bool{}}
}

// Note writes a line of kind key now, by line, if the pace lets it: held
// is the count of lines of the kind held back since the one before,
// written at since (zero with held 0 for none). If it does not, the line
// is counted, and tail is called with the count once it is due (see
// Paced). A nil Paced writes every line.
func (p *Paced) Note(key string, line, tail func(held int, since time.Time)) {
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
	if p.tails[key] || p.closed {
		return
	}
	p.tails[key] = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.sayCount(key, tail)
	}()
}

// Forget makes the next line of kind key the first again (Limiter.Forget):
// those held back are not counted.
func (p *Paced) Forget(key string) {
	if p != nil {
		p.limiter.Forget(key)
	}
}

// End says at once, by tail, the count of the lines of kind key held back
// since the last one written, if any, and makes the next line of the kind
// the first again (Forget): for a condition that ended (a store back), so
// that the count of its last lines is not dropped, nor waits for the
// interval's end, and the next time it comes is news.
func (p *Paced) End(key string, tail func(held int, since time.Time)) {
	if p == nil {
		return
	}
	p.mu.Lock()
	held, since, ok := p.limiter.flush(key)
	p.limiter.Forget(key)
	p.mu.Unlock()
	if ok {
		tail(held, since)
	}
}

// Close says at once the counts that are due later, waits for their
// lines, and ends the pacing's goroutines: lines held back after it are
// counted by the next line of their kind only.
func (p *Paced) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.stop()
	p.wg.Wait()
}

// sayCount waits until the interval after the last line of kind key
// written has passed, or Close, and then calls tail with the count of
// those held back, if a line written meanwhile has not given it.
func (p *Paced) sayCount(key string, tail func(held int, since time.Time)) {
	for {
		p.mu.Lock()
		end, pending := p.limiter.intervalEnd(key)
		wait := end.Sub(p.clock.Now())
		if !pending || wait <= 0 || p.ctx.Err() != nil {
			// Under p.mu: a line held back after this is seen by Note
			// with no goroutine to count it, and starts one.
			delete(p.tails, key)
			held, since, ok := p.limiter.flush(key)
			p.mu.Unlock()
			if ok {
				tail(held, since)
			}
			return
		}
		p.mu.Unlock()
		t := p.clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-p.ctx.Done():
		}
		t.Stop()
	}
}

// intervalEnd reports when the interval after the last line of kind key
// written ends, and whether lines of it are held back (pending).
func (l *Limiter) intervalEnd(key string) (end time.Time, pending bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k, seen := l.kinds[key]
	return k.at.Add(l.every), seen && k.held > 0
}
