package engine

import (
	"container/heap"
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
)

// The lease ledger watches every lease begin, renew, lapse and end (DESIGN.md
// §3). A delete or visibility change that carries the receipt of a lease that
// had already lapsed is a late completion: the holder was still working when
// the queue gave the message away. From these events the ledger keeps, per
// queue, statistics since start and over a sliding window, and a bounded
// history per message.
//
// The ledger lives in the engine's memory: it is per node and starts empty.

const (
	windowMinutes = 15
	// maxTrackedMessages bounds the messages whose leases and history a queue
	// keeps; the least recently active are forgotten first.
	maxTrackedMessages = 20000
	// maxLeasesPerMessage bounds the leases remembered per message.
	maxLeasesPerMessage = 16
	// maxHistory bounds the events remembered per message.
	maxHistory = 64
	// maxRecentLate bounds the late completions a queue lists.
	maxRecentLate = 50
)

// Client identifies who sent a request, for lease histories.
type Client struct {
	Addr      string
	UserAgent string
}

type clientKey struct{}

// WithClient records the requesting client in ctx.
func WithClient(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

func clientFrom(ctx context.Context) Client {
	c, _ := ctx.Value(clientKey{}).(Client)
	return c
}

// Lease event kinds, as the history reports them.
const (
	EventReceive    = "receive"
	EventRenew      = "renew"
	EventRelease    = "release"
	EventExpire     = "expire"
	EventDelete     = "delete"
	EventLateDelete = "late-delete"
	EventLateChange = "late-change"
	EventDeadLetter = "dead-letter"
	// EventRemoved ends a lease whose message another receiver's late
	// delete removed from under it.
	EventRemoved = "removed"
)

// LeaseEvent is one entry of a message's lease history.
type LeaseEvent struct {
	At           time.Time
	Kind         string
	Epoch        uint32
	ReceiveCount int
	// Deadline is the lease's end after a receive or renewal.
	Deadline time.Time
	// Late is how long after its lease's deadline a late completion came.
	Late time.Duration
	// Duplicate marks a late completion on a message that had meanwhile
	// been leased to another receiver.
	Duplicate bool
	Client    Client
}

type leaseState int

const (
	leaseActive leaseState = iota
	leaseDeleted
	leaseReleased
	leaseExpired
	leaseDeadLettered
)

type leaseRec struct {
	msg             *trackedMessage
	epoch           uint32
	begin, deadline time.Time
	renewals        int
	state           leaseState
	redelivered     bool // a later lease followed its expiry
	proven          bool // a late completion showed its holder was working
	heapIdx         int
}

type trackedMessage struct {
	id      string
	latest  uint32
	leases  map[uint32]*leaseRec
	history []LeaseEvent
	elem    *list.Element
}

// counters are the ledger's tallies for one period.
type counters struct {
	sent, received, completed, expired, late, duplicates uint64
	redeliveries, lapsedWorking, renewals, releases      uint64
	deadLettered                                         uint64
	durations                                            histogram // receive to delete
	unrenewed                                            histogram // the same, leases never renewed
}

func (c *counters) merge(o *counters) {
	c.sent += o.sent
	c.received += o.received
	c.completed += o.completed
	c.expired += o.expired
	c.late += o.late
	c.duplicates += o.duplicates
	c.redeliveries += o.redeliveries
	c.lapsedWorking += o.lapsedWorking
	c.renewals += o.renewals
	c.releases += o.releases
	c.deadLettered += o.deadLettered
	c.durations.merge(&o.durations)
	c.unrenewed.merge(&o.unrenewed)
}

type minuteCounters struct {
	minute int64
	counters
}

type queueLedger struct {
	// recentLate keeps the latest late completions, oldest first.
	recentLate []LateCompletion
	messages   map[string]*trackedMessage
	lru        *list.List // of *trackedMessage, most recently active at the back
	active     leaseHeap
	total      counters
	window     [windowMinutes]minuteCounters
}

type ledger struct {
	mu     sync.Mutex
	queues map[uint64]*queueLedger
}

func (l *ledger) queue(id uint64) *queueLedger {
	if l.queues == nil {
		l.queues = make(map[uint64]*queueLedger)
	}
	ql, ok := l.queues[id]
	if !ok {
		ql = &queueLedger{messages: make(map[string]*trackedMessage), lru: list.New()}
		l.queues[id] = ql
	}
	return ql
}

// count applies f to the since-start counters and to now's minute.
func (ql *queueLedger) count(now time.Time, f func(*counters)) {
	f(&ql.total)
	m := now.Unix() / 60
	b := &ql.window[m%windowMinutes]
	if b.minute != m {
		*b = minuteCounters{minute: m}
	}
	f(&b.counters)
}

// windowed sums the minutes of the last windowMinutes.
func (ql *queueLedger) windowed(now time.Time) counters {
	var c counters
	m := now.Unix() / 60
	for i := range ql.window {
		if b := &ql.window[i]; b.minute > m-windowMinutes && b.minute <= m {
			c.merge(&b.counters)
		}
	}
	return c
}

func (ql *queueLedger) message(id string) *trackedMessage {
	tm, ok := ql.messages[id]
	if ok {
		ql.lru.MoveToBack(tm.elem)
		return tm
	}
	tm = &trackedMessage{id: id, leases: make(map[uint32]*leaseRec)}
	tm.elem = ql.lru.PushBack(tm)
	ql.messages[id] = tm
	for ql.lru.Len() > maxTrackedMessages {
		old := ql.lru.Remove(ql.lru.Front()).(*trackedMessage)
		for _, r := range old.leases {
			if r.heapIdx >= 0 {
				heap.Remove(&ql.active, r.heapIdx)
			}
		}
		delete(ql.messages, old.id)
	}
	return tm
}

func (tm *trackedMessage) record(ev LeaseEvent) {
	if len(tm.history) == maxHistory {
		copy(tm.history, tm.history[1:])
		tm.history = tm.history[:maxHistory-1]
	}
	tm.history = append(tm.history, ev)
}

// expire ends the active leases whose deadline has passed.
func (ql *queueLedger) expire(now time.Time) {
	for len(ql.active) > 0 && !ql.active[0].deadline.After(now) {
		r := heap.Pop(&ql.active).(*leaseRec)
		r.state = leaseExpired
		ql.count(r.deadline, func(c *counters) { c.expired++ })
		r.msg.record(LeaseEvent{At: r.deadline, Kind: EventExpire, Epoch: r.epoch})
	}
}

func (ql *queueLedger) end(r *leaseRec, state leaseState) {
	if r.heapIdx >= 0 {
		heap.Remove(&ql.active, r.heapIdx)
	}
	r.state = state
}

// sent counts n messages sent.
func (l *ledger) sent(queueID uint64, n int, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queue(queueID).count(now, func(c *counters) { c.sent += uint64(n) })
}

// begin records a receive: a new lease of m ending at m.VisibleAt.
func (l *ledger) begin(queueID uint64, m *baton.Message, now time.Time, client Client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ql := l.queue(queueID)
	ql.expire(now)
	tm := ql.message(m.ID)
	if prev, ok := tm.leases[m.Epoch-1]; ok && prev.state == leaseExpired && !prev.redelivered {
		prev.redelivered = true
		ql.count(now, func(c *counters) { c.redeliveries++ })
	}
	r := &leaseRec{msg: tm, epoch: m.Epoch, begin: now, deadline: m.VisibleAt, heapIdx: -1}
	if m.VisibleAt.After(now) {
		heap.Push(&ql.active, r)
	} else {
		r.state = leaseReleased // a zero-length lease: the message stayed visible
	}
	tm.leases[m.Epoch] = r
	delete(tm.leases, m.Epoch-maxLeasesPerMessage)
	tm.latest = max(tm.latest, m.Epoch)
	ql.count(now, func(c *counters) { c.received++ })
	tm.record(LeaseEvent{At: now, Kind: EventReceive, Epoch: m.Epoch, ReceiveCount: m.ReceiveCount, Deadline: m.VisibleAt, Client: client})
}

// completed records a delete by a receipt. removed says the message was
// deleted: a late delete on a standard queue removes it even though another
// receiver holds it now, which ends that lease too.
func (l *ledger) completed(queueID uint64, r receipt, out baton.LeaseOutcome, removed bool, now time.Time, client Client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ql := l.queue(queueID)
	ql.expire(now)
	tm := ql.message(r.MessageID)
	rec := tm.leases[r.Epoch]
	d := now.Sub(r.LeasedAt)
	renewed := rec != nil && rec.renewals > 0
	ql.count(now, func(c *counters) {
		c.completed++
		c.durations.add(d)
		if !renewed {
			c.unrenewed.add(d)
		}
	})
	if out.Result == baton.LeaseCurrent {
		if rec != nil {
			ql.end(rec, leaseDeleted)
		}
		tm.record(LeaseEvent{At: now, Kind: EventDelete, Epoch: r.Epoch, Client: client})
		return
	}
	ql.late(tm, rec, r, out, now, EventLateDelete, client)
	if cur := tm.leases[tm.latest]; removed && cur != nil && cur.state == leaseActive {
		ql.end(cur, leaseDeleted)
		tm.record(LeaseEvent{At: now, Kind: EventRemoved, Epoch: cur.epoch})
	}
}

// changed records a visibility change by a receipt.
func (l *ledger) changed(queueID uint64, r receipt, out baton.LeaseOutcome, now, deadline time.Time, client Client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ql := l.queue(queueID)
	ql.expire(now)
	tm := ql.message(r.MessageID)
	rec := tm.leases[r.Epoch]
	if out.Result != baton.LeaseCurrent {
		ql.late(tm, rec, r, out, now, EventLateChange, client)
		return
	}
	if !deadline.After(now) {
		if rec != nil {
			ql.end(rec, leaseReleased)
		}
		ql.count(now, func(c *counters) { c.releases++ })
		tm.record(LeaseEvent{At: now, Kind: EventRelease, Epoch: r.Epoch, Client: client})
		return
	}
	if rec != nil {
		rec.renewals++
		rec.deadline = deadline
		if rec.heapIdx >= 0 {
			heap.Fix(&ql.active, rec.heapIdx)
		}
	}
	ql.count(now, func(c *counters) { c.renewals++ })
	tm.record(LeaseEvent{At: now, Kind: EventRenew, Epoch: r.Epoch, Deadline: deadline, Client: client})
}

// late records a late completion: a receipt whose lease had lapsed.
func (ql *queueLedger) late(tm *trackedMessage, rec *leaseRec, r receipt, out baton.LeaseOutcome, now time.Time, kind string, client Client) {
	dup := tm.latest > r.Epoch || out.Message != nil && out.Message.Epoch > r.Epoch
	var lateBy time.Duration
	if rec != nil {
		lateBy = now.Sub(rec.deadline)
	}
	ql.count(now, func(c *counters) {
		c.late++
		if dup {
			c.duplicates++
		}
	})
	if rec != nil && !rec.proven {
		rec.proven = true
		if rec.redelivered {
			ql.count(now, func(c *counters) { c.lapsedWorking++ })
		}
	}
	tm.record(LeaseEvent{At: now, Kind: kind, Epoch: r.Epoch, Late: lateBy, Duplicate: dup, Client: client})
	if len(ql.recentLate) == maxRecentLate {
		ql.recentLate = append(ql.recentLate[:0], ql.recentLate[1:]...)
	}
	ql.recentLate = append(ql.recentLate, LateCompletion{MessageID: tm.id, At: now, Kind: kind, Epoch: r.Epoch, Late: lateBy, Duplicate: dup, Client: client})
}

// deadLettered records a message moved to its dead-letter queue.
func (l *ledger) deadLettered(queueID uint64, m *baton.Message, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ql := l.queue(queueID)
	ql.expire(now)
	tm := ql.message(m.ID)
	if rec, ok := tm.leases[m.Epoch]; ok {
		ql.end(rec, leaseDeadLettered)
	}
	ql.count(now, func(c *counters) { c.deadLettered++ })
	tm.record(LeaseEvent{At: now, Kind: EventDeadLetter, Epoch: m.Epoch, ReceiveCount: m.ReceiveCount - 1})
}

// history returns a copy of a message's events.
func (l *ledger) history(queueID uint64, messageID string, now time.Time) ([]LeaseEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ql := l.queue(queueID)
	ql.expire(now)
	tm, ok := ql.messages[messageID]
	if !ok {
		return nil, false
	}
	return append([]LeaseEvent(nil), tm.history...), true
}

// snapshot returns the queue's counters since start and over the window.
func (l *ledger) snapshot(queueID uint64, now time.Time) (total, window counters) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ql := l.queue(queueID)
	ql.expire(now)
	total = ql.total
	total.durations = cloneHist(ql.total.durations)
	total.unrenewed = cloneHist(ql.total.unrenewed)
	return total, ql.windowed(now)
}

func cloneHist(h histogram) histogram {
	c := histogram{n: h.n, max: h.max, counts: make(map[int]uint64, len(h.counts))}
	for k, v := range h.counts {
		c.counts[k] = v
	}
	return c
}

// forget drops a deleted queue's ledger.
func (l *ledger) forget(queueID uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.queues, queueID)
}

// leaseHeap orders active leases by deadline.
type leaseHeap []*leaseRec

func (h leaseHeap) Len() int           { return len(h) }
func (h leaseHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h leaseHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *leaseHeap) Push(x any) {
	r := x.(*leaseRec)
	r.heapIdx = len(*h)
	*h = append(*h, r)
}
func (h *leaseHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	r.heapIdx = -1
	return r
}
