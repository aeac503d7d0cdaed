package gcpace

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Defaults of a Pacer.
const (
	// DefaultHeadroom is how much the heap may grow between collections
	// once the live heap is larger than it.
	DefaultHeadroom = 64 << 20
	// MinPercent bounds how often collections come, so that they do not
	// cost more than the memory they save: the heap grows between
	// collections by at least MinPercent of its scannable part. A
	// collection's work is marking, which reads only the memory that may
	// hold pointers: pointer-free memory, such as the durable store's
	// index (store/memstore), is marked without being read, and only
	// costs the headroom it would get at Go's default.
	MinPercent = 25
	// interval is how often the live heap is looked at.
	interval = time.Second
)

// Percent is the GOGC that lets a heap of live bytes, scan of them
// scannable, grow by about headroom before the next collection: 100 (Go's
// default) while live is at most headroom, then less, down to MinPercent
// of the scannable share of live, and at least 1.
func Percent(live, scan, headroom uint64) int {
	if live <= headroom {
		return 100
	}
	floor := max(int((min(scan, live)*MinPercent+live-1)/live), 1)
	return max(int(headroom*100/live), floor)
}

// Pacer sets GOGC from the live heap about once a second. It is a service:
// Start it once, Stop it once.
type Pacer struct {
	headroom uint64
	cancel   context.CancelFunc
	done     chan struct{}
}

// New returns a Pacer keeping the growth between collections near
// headroom bytes (DefaultHeadroom if 0).
func New(headroom uint64) *Pacer {
	if headroom == 0 {
		headroom = DefaultHeadroom
	}
	return &Pacer{headroom: headroom}
}

// Start begins pacing, unless the GOGC environment variable is set: then
// the operator chose the collector's pace, and Start does nothing.
func (p *Pacer) Start(ctx context.Context) {
	if os.Getenv("GOGC") != "" {
		return
	}
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go p.run(ctx)
}

// Stop ends pacing and gives GOGC back the value it had before Start.
func (p *Pacer) Stop() {
	if p.cancel == nil {
		return
	}
	p.cancel()
	<-p.done
}

func (p *Pacer) run(ctx context.Context) {
	defer close(p.done)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/heap:bytes"}}
	percent := 100
	before := debug.SetGCPercent(percent)
	defer debug.SetGCPercent(before)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 || sample[1].Value.Kind() != metrics.KindUint64 {
			continue
		}
		if pct := Percent(sample[0].Value.Uint64(), sample[1].Value.Uint64(), p.headroom); pct != percent {
			debug.SetGCPercent(pct)
			percent = pct
		}
	}
}
