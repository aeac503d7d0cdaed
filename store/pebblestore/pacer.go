package pebblestore

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// pacer is Pebble's compaction scheduler: it runs as many compactions at
// once as Pebble asks for (DBForCompaction.GetAllowedWithoutPermission),
// as Pebble's own does, and makes a compaction that failed on a table it
// could not read (damaged, or the disk failing its reads) hold its place
// for backoffMax before the next may start.
//
// Pebble picks a failed compaction again at once, and a table of level 0
// is never set aside: a compaction reading one whose index is damaged
// failed thousands of times a second (a core's worth of CPU) for as long
// as the table stayed there, and one reading a table the disk failed to
// read, 1,700 times a second. Pebble calls Done, at the end of every
// compaction it scheduled, holding no lock and after it told of the
// compaction's end (health counts those failed on a table they could not
// read), so the pause is made there, once for each such failure:
// compactions that work, meanwhile or after, are not held back.
type pacer struct {
	h *health
	// pause holds a compaction's place (time.Sleep; tests count).
	pause func(time.Duration)

	mu      sync.Mutex
	db      pebble.DBForCompaction
	running int
	// paused counts the compactions failed on a table they could not
	// read (health.unreadCompactions) whose place was held.
	paused int64
	// started is set by Register, unregistered by Unregister.
	started, unregistered bool
	// poke asks the granter to look for a waiting compaction; stop ends
	// it, and stopped is closed once it has.
	poke          chan struct{}
	stop, stopped chan struct{}
}

// grantEvery is how often the granter looks for a compaction Pebble is
// waiting to run, besides when one ends (Pebble's own looks as often).
const grantEvery = 100 * time.Millisecond

func newPacer(h *health) *pacer {
	return &pacer{h: h, pause: time.Sleep, poke: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
}

// Register implements pebble.CompactionScheduler.
func (p *pacer) Register(_ int, db pebble.DBForCompaction) {
	p.mu.Lock()
	p.db, p.started = db, true
	p.mu.Unlock()
	go p.granter()
}

// Unregister implements pebble.CompactionScheduler: no compaction is
// granted after it returns. It may be called more than once, and without
// Register (an opening of the log that failed).
func (p *pacer) Unregister() {
	p.mu.Lock()
	if !p.unregistered {
		p.unregistered = true
		close(p.stop)
	}
	started := p.started
	p.mu.Unlock()
	if started {
		<-p.stopped
	}
}

// TrySchedule implements pebble.CompactionScheduler.
func (p *pacer) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.roomLocked() {
		return false, nil
	}
	p.running++
	return true, &paced{p: p}
}

// UpdateGetAllowedWithoutPermission implements pebble.CompactionScheduler.
func (p *pacer) UpdateGetAllowedWithoutPermission() { p.wake() }

// roomLocked reports whether another compaction may start.
func (p *pacer) roomLocked() bool {
	return !p.unregistered && p.db != nil && p.running < p.db.GetAllowedWithoutPermission()
}

func (p *pacer) wake() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// granter starts the compactions Pebble waits to run, while there is
// room, until Unregister.
func (p *pacer) granter() {
	defer close(p.stopped)
	t := time.NewTicker(grantEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		case <-p.poke:
		}
		for p.grantOne() {
		}
	}
}

// grantOne starts one compaction Pebble waits to run, if there is one
// and room for it, and reports whether it did. As Pebble's own scheduler,
// it counts the compaction once Pebble took it: a slot held while it
// looks would refuse a TrySchedule made meanwhile, and Pebble, refused,
// leaves the compaction waiting for the next look.
func (p *pacer) grantOne() bool {
	p.mu.Lock()
	room, db := p.roomLocked(), p.db
	p.mu.Unlock()
	if !room {
		return false
	}
	if waiting, _ := db.GetWaitingCompaction(); !waiting || !db.Schedule(&paced{p: p}) {
		return false
	}
	p.mu.Lock()
	p.running++
	p.mu.Unlock()
	return true
}

func (p *pacer) done() {
	p.mu.Lock()
	p.running--
	p.mu.Unlock()
}

// owesPause reports whether a compaction failed on a table it could not
// read that has not held its place yet, and counts the pause as held.
func (p *pacer) owesPause() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h.unreadCompactions.Load() <= p.paused {
		return false
	}
	p.paused++
	return true
}

// paced is a compaction's place.
type paced struct{ p *pacer }

func (g *paced) Started()                                          {}
func (g *paced) MeasureCPU(pebble.CompactionGoroutineKind)         {}
func (g *paced) CumulativeStats(pebble.CompactionGrantHandleStats) {}

// Done ends the compaction: if one failed on a table it could not read
// and has not paused yet (this one: Pebble tells of a compaction's end,
// then calls its Done), it holds its place backoffMax first.
func (g *paced) Done() {
	if g.p.owesPause() {
		g.p.pause(backoffMax)
	}
	g.p.done()
	g.p.wake()
}
