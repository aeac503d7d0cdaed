package ledger

import (
	"cmp"
	"container/heap"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
)

// The lease ledger watches every lease begin, renew, lapse and end (docs/architecture.md
// §3). A delete or visibility change that carries the receipt of a lease that
// had already lapsed is a late completion: the holder was still working when
// the queue gave the message away. From these events the ledger keeps, per
// queue, statistics since start and over a sliding window, and a bounded
// history per message.
//
// The ledger lives in the node's memory and starts empty. Every change to
// it is an Event; when the store is shared by several nodes (a
// baton.SharedStore), each node publishes the events it makes and applies
// the others' (bus.go), so every node's reports cover the whole cluster,
// from the moment that node started ("since start" is since this node
// started). Events of different nodes arrive in any order and a little
// late, so applying one never assumes another came first: a lease record
// may be made by any event of its lease, a receive never starts a lease
// that a delete already ended, and an expiry the ledger inferred from a
// deadline is taken back when the store is later found to have renewed or
// ended that lease in time. The counts that follow from two events (a
// redelivery, a lapse while working) are made by whichever arrives second.

const (
	windowMinutes = 15
	// maxTrackedMessages bounds the messages whose leases and history a queue
	// keeps; the least recently active are forgotten first.
	maxTrackedMessages = 20000
	// maxLedgerMessages and maxLedgerEvents bound the messages and history
	// events the ledger keeps over all queues, the least recently active
	// message of any queue forgotten first: a full queue holds about 280 MB
	// (1.28 million events of some 220 bytes), so the per-queue bound alone
	// let a client grow memory by that much with every queue it made. These
	// hold the ledger to some 600 MB however many queues there are.
	maxLedgerMessages = 200000
	maxLedgerEvents   = 2000000
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

// WithClient records the requesting client in ctx. The address and user
// agent are cut to maxEventClient bytes and copied: the ledger keeps them in
// every lease event of the request, for as long as it remembers the
// message, and a user agent may be as long as the request's headers.
func WithClient(ctx context.Context, c Client) context.Context {
	c.Addr, c.UserAgent = clientString(c.Addr), clientString(c.UserAgent)
	return context.WithValue(ctx, clientKey{}, c)
}

// clientString returns s cut to at most maxEventClient bytes, on a
// character boundary, in memory of its own.
func clientString(s string) string {
	if len(s) <= maxEventClient {
		return s
	}
	n := maxEventClient
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n])
}

// ClientFrom returns the client WithClient recorded in ctx, if any.
func ClientFrom(ctx context.Context) Client {
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
	// Deadline is the lease's end after a receive or renewal; on a late
	// change that went through to the message's current lease (a standard
	// queue's older receipt handle), the new end of that lease.
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
	leaseRemoved
)

// leaseRec is what the ledger knows of one lease. Events of several nodes
// arrive in any order, so a record may be created by any of them: received
// says whether the receive that began the lease has been seen.
type leaseRec struct {
	msg             *trackedMessage
	epoch           uint32
	begin, deadline time.Time
	// deadlineAt is when deadline was set: a renewal applied after a later
	// one does not move the deadline back.
	deadlineAt  time.Time
	renewals    int
	state       leaseState
	received    bool // its receive has been applied
	local       bool // this node handed it out: its expiry is this node's to count
	redelivered bool // a later lease followed its expiry
	proven      bool // a late completion showed its holder was working
	working     bool // counted as lapsed while working (redelivered and proven)
	lateDeleted bool // a late delete by its receipt was applied: another is a retry
	duplicated  bool // counted as a duplicate execution, which it is once
	returned    bool // counted as lapsed and later proven (lapsedReturned)
	// snoozed: the last change its holder made brought its end forward,
	// at snoozeAt; snoozeLapsed: it then reached that end, counted as a
	// release with a delay (changed).
	snoozed, snoozeLapsed bool
	snoozeAt              time.Time
	releasedNow           bool // its holder released it with VisibilityTimeout 0
	heapIdx               int
}

type trackedMessage struct {
	id     string
	latest uint32
	// sentAt is when the message was sent, as its receives said: retention
	// deletes it by that.
	sentAt time.Time
	// leases are the message's remembered leases, by epoch ascending
	// (leaseOf); history, its events in time order. Both begin in the
	// message's own arrays, which hold the one lease and the receive and
	// delete of a message handled once without further allocations.
	leases  []*leaseRec
	history []LeaseEvent
	// queueLRU links tm in its queue's lru, ledgerLRU in the ledger's; ql
	// is its queue's ledger.
	queueLRU, ledgerLRU lruLinks
	ql                  *queueLedger

	firstLease leaseRec
	leaseBuf   [1]*leaseRec
	historyBuf [2]LeaseEvent
}

// newTrackedMessage returns a message with no leases or history.
func newTrackedMessage(id string, ql *queueLedger) *trackedMessage {
	tm := &trackedMessage{id: id, ql: ql}
	tm.leases = tm.leaseBuf[:0]
	tm.history = tm.historyBuf[:0]
	return tm
}

// leaseOf returns the record of lease epoch, or nil if the ledger does not
// remember it.
func (tm *trackedMessage) leaseOf(epoch uint32) *leaseRec {
	for _, r := range tm.leases {
		if r.epoch == epoch {
			return r
		}
	}
	return nil
}

// counters are the ledger's tallies for one period.
type counters struct {
	sent, received, completed, expired, late, duplicates uint64
	redeliveries, lapsedWorking, renewals, releases      uint64
	deadLettered                                         uint64
	durations                                            histogram // receive to delete
	unrenewed                                            histogram // the same, leases never renewed
	// atMost[i] counts the durations at most LeaseDurationBounds[i], and
	// durationSum adds them up: /metrics's histogram, exact where
	// durations' buckets are within 2%.
	atMost      [len(LeaseDurationBounds)]uint64
	durationSum time.Duration
	// lateWorked is the longest from a receive to a late completion by its
	// receipt: its holder worked at least that long, whether or not it
	// ever deleted.
	lateWorked time.Duration
	// lateLeases counts the leases completed late, once each however many
	// late requests their holders made; lapsedReturned the lapsed leases
	// whose holder later came back with a late completion. The lapsed
	// leases less these are those whose holder never came back.
	lateLeases, lapsedReturned uint64
	// rereleased counts the leases released at once (VisibilityTimeout 0)
	// whose message's lease before was released at once too: a message
	// going round receivers that do not handle it.
	rereleased uint64
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
	c.lateLeases += o.lateLeases
	c.lapsedReturned += o.lapsedReturned
	c.rereleased += o.rereleased
	c.durations.merge(&o.durations)
	c.unrenewed.merge(&o.unrenewed)
	for i := range c.atMost {
		c.atMost[i] += o.atMost[i]
	}
	c.durationSum += o.durationSum
	c.lateWorked = max(c.lateWorked, o.lateWorked)
}

// LeaseDurationBounds are the upper bounds of the lease-duration histogram
// /metrics exports, from a quick handler to the 12-hour ceiling; the ledger
// counts every completed lease against them exactly.
var LeaseDurationBounds = [...]time.Duration{
	100 * time.Millisecond, 500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second,
	10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 4 * time.Hour, 12 * time.Hour,
}

// addDuration counts a completed lease's duration, receive to delete.
func (c *counters) addDuration(d time.Duration) {
	c.durations.add(d)
	c.durationSum += d
	for i, b := range LeaseDurationBounds {
		if d <= b {
			c.atMost[i]++
		}
	}
}

// dec takes one from a counter that a retracted inference had added to,
// never below zero.
func dec(n *uint64) {
	if *n > 0 {
		*n--
	}
}

type minuteCounters struct {
	minute int64
	counters
	// millis counts the minute's lease durations (receive to delete) by
	// whole milliseconds, rounded up, while they take at most
	// maxExactDurations values, so that LeaseHistogram places a lease on
	// the right side of a bound of whole milliseconds (the visibility
	// timeout), where durations' 2% buckets can put it on either. inexact
	// says the minute saw more values: it counts only in durations.
	millis  map[int64]uint64
	inexact bool
}

// maxExactDurations bounds the distinct durations a minute keeps exactly.
const maxExactDurations = 1024

// countMillis records a lease duration in the exact counts of the minute of
// at, after count has made that minute's slot current.
func (ql *queueLedger) countMillis(at time.Time, d time.Duration) {
	m := at.Unix() / 60
	b := &ql.window[m%windowMinutes]
	if b.minute != m || b.inexact {
		return
	}
	k := int64((d + time.Millisecond - 1) / time.Millisecond)
	if _, ok := b.millis[k]; !ok && len(b.millis) >= maxExactDurations {
		b.millis, b.inexact = nil, true
		return
	}
	if b.millis == nil {
		b.millis = make(map[int64]uint64)
	}
	b.millis[k]++
}

type queueLedger struct {
	l *Ledger
	// recentLate keeps the latest late completions, oldest first.
	recentLate []LateCompletion
	messages   map[string]*trackedMessage
	lru        lru // of its tracked messages, most recently active at the back
	active     leaseHeap
	// total and window count what every node saw (the cluster's view when
	// the store is a LedgerBus); own counts only what this node originated:
	// the events it handled and the expiries of the leases it handed out,
	// so that summing own over the nodes counts every event once.
	total  counters
	own    counters
	window [windowMinutes]minuteCounters
	// ownExpiredShown is the most own.expired that owned has reported. An
	// expiry inferred here is taken back when a renewal or delete made
	// through another node arrives late, but owned feeds a Prometheus
	// counter, which must never go down: until own.expired passes it again,
	// owned reports this instead.
	ownExpiredShown uint64
}

// Ledger is one node's lease ledger. Its zero value is an empty ledger
// that no other node shares; New makes one that does when its store is
// shared.
type Ledger struct {
	// started is when the node's ledger began (reports' HistorySince).
	started time.Time
	// clock gives other nodes' events the zone of this node's own.
	clock clock.Clock
	log   *slog.Logger
	// node tells this node's batches from other nodes' on the bus;
	// publisher is nil unless the ledger has a bus.
	node       uint64
	publisher  *ledgerPublisher
	badBatches atomic.Uint64

	mu     sync.Mutex
	queues map[uint64]*queueLedger
	// lru holds every queue's tracked messages, most recently active at the
	// back; events counts their history events.
	lru    lru
	events int
	// maxMessages and maxEvents, if set, replace maxLedgerMessages and
	// maxLedgerEvents: tests lower them.
	maxMessages, maxEvents int
}

func (l *Ledger) queue(id uint64) *queueLedger {
	if l.queues == nil {
		l.queues = make(map[uint64]*queueLedger)
	}
	ql, ok := l.queues[id]
	if !ok {
		ql = &queueLedger{l: l, messages: make(map[string]*trackedMessage), lru: lru{queue: true}}
		l.queues[id] = ql
	}
	return ql
}

// count applies f to the since-start counters, to own when local, and to
// the minute of at. A minute older than the one its slot of the window now
// holds has left the window and only counts since start.
func (ql *queueLedger) count(at time.Time, local bool, f func(*counters)) {
	f(&ql.total)
	if local {
		f(&ql.own)
	}
	m := at.Unix() / 60
	b := &ql.window[m%windowMinutes]
	if b.minute > m {
		return
	}
	if b.minute != m {
		*b = minuteCounters{minute: m}
	}
	f(&b.counters)
}

// uncount takes back what count did with the same at and local, for an
// inference a later event disproved.
func (ql *queueLedger) uncount(at time.Time, local bool, f func(*counters)) {
	f(&ql.total)
	if local {
		f(&ql.own)
	}
	m := at.Unix() / 60
	if b := &ql.window[m%windowMinutes]; b.minute == m {
		f(&b.counters)
	}
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
		ql.lru.moveToBack(tm)
		ql.l.lru.moveToBack(tm)
		return tm
	}
	tm = newTrackedMessage(id, ql)
	ql.lru.pushBack(tm)
	ql.l.lru.pushBack(tm)
	ql.messages[id] = tm
	for ql.lru.n > maxTrackedMessages {
		ql.forget(ql.lru.head)
	}
	return tm
}

// forget drops a tracked message with its leases and history.
func (ql *queueLedger) forget(tm *trackedMessage) {
	ql.lru.remove(tm)
	ql.l.lru.remove(tm)
	ql.l.events -= len(tm.history)
	for _, r := range tm.leases {
		if r.heapIdx >= 0 {
			heap.Remove(&ql.active, r.heapIdx)
		}
	}
	delete(ql.messages, tm.id)
}

// trim forgets the least recently active messages of any queue while the
// ledger keeps more than its bounds. It runs after each event, so the
// messages an event works on are never forgotten under it.
func (l *Ledger) trim() {
	maxMessages, maxEvents := cmp.Or(l.maxMessages, maxLedgerMessages), cmp.Or(l.maxEvents, maxLedgerEvents)
	for l.lru.n > 0 && (l.lru.n > maxMessages || l.events > maxEvents) {
		tm := l.lru.head
		tm.ql.forget(tm)
	}
}

// lease returns the record of the message's lease epoch, creating it (not
// yet received, active, outside the heap) if the ledger has not seen it.
func (tm *trackedMessage) lease(epoch uint32) *leaseRec {
	if r := tm.leaseOf(epoch); r != nil {
		return r
	}
	r := &tm.firstLease
	if r.msg != nil { // taken by an earlier lease
		r = &leaseRec{}
	}
	*r = leaseRec{msg: tm, epoch: epoch, heapIdx: -1}
	i := len(tm.leases)
	for i > 0 && tm.leases[i-1].epoch > epoch {
		i--
	}
	tm.leases = slices.Insert(tm.leases, i, r)
	if epoch > maxLeasesPerMessage {
		tm.leases = slices.DeleteFunc(tm.leases, func(old *leaseRec) bool {
			return old.epoch <= epoch-maxLeasesPerMessage && old.heapIdx < 0
		})
	}
	return r
}

// record inserts ev into the history in time order; events of one instant
// keep the order they arrived in.
func (tm *trackedMessage) record(ev LeaseEvent) {
	if len(tm.history) == maxHistory {
		copy(tm.history, tm.history[1:])
		tm.history = tm.history[:maxHistory-1]
	} else {
		tm.ql.l.events++
	}
	i := len(tm.history)
	for i > 0 && tm.history[i-1].At.After(ev.At) {
		i--
	}
	tm.history = slices.Insert(tm.history, i, ev)
}

// unrecord removes the expiry of epoch from the history.
func (tm *trackedMessage) unrecord(epoch uint32) {
	n := len(tm.history)
	tm.history = slices.DeleteFunc(tm.history, func(ev LeaseEvent) bool {
		return ev.Kind == EventExpire && ev.Epoch == epoch
	})
	tm.ql.l.events -= n - len(tm.history)
}

// expire ends the active leases whose deadline has passed.
func (ql *queueLedger) expire(now time.Time) {
	for len(ql.active) > 0 && !ql.active[0].deadline.After(now) {
		r := heap.Pop(&ql.active).(*leaseRec)
		if r.snoozed {
			// Its holder set this end and let it come: a release with a
			// delay, unless it comes back (unsnooze, snoozeOverran).
			r.state, r.snoozeLapsed = leaseReleased, true
			ql.count(r.snoozeAt, r.local, func(c *counters) { c.releases++ })
			continue
		}
		r.state = leaseExpired
		ql.count(r.deadline, r.local, func(c *counters) { c.expired++ })
		r.msg.record(LeaseEvent{At: r.deadline, Kind: EventExpire, Epoch: r.epoch})
		ql.returned(r)
		ql.redeliver(r.msg, r.epoch+1)
	}
}

// unexpire takes back the expiry of r: the store said its lease was still
// current after the ledger had judged it lapsed, because a renewal made
// through another node had not arrived yet.
func (ql *queueLedger) unexpire(r *leaseRec) {
	ql.uncount(r.deadline, r.local, func(c *counters) { dec(&c.expired) })
	if next := r.msg.leaseOf(r.epoch + 1); r.redelivered && next != nil {
		ql.uncount(next.begin, next.local, func(c *counters) { dec(&c.redeliveries) })
	}
	r.redelivered = false
	if r.working {
		r.working = false
		ql.uncount(r.deadline, r.local, func(c *counters) { dec(&c.lapsedWorking) })
	}
	if r.returned {
		r.returned = false
		ql.uncount(r.deadline, r.local, func(c *counters) { dec(&c.lapsedReturned) })
	}
	r.msg.unrecord(r.epoch)
	r.state = leaseActive
}

// redeliver notes that lease epoch of tm followed the expiry of the one
// before it, once both are known, whichever arrived first.
func (ql *queueLedger) redeliver(tm *trackedMessage, epoch uint32) {
	prev, next := tm.leaseOf(epoch-1), tm.leaseOf(epoch)
	if prev == nil || next == nil || !next.received || prev.state != leaseExpired || prev.redelivered {
		return
	}
	prev.redelivered = true
	ql.count(next.begin, next.local, func(c *counters) { c.redeliveries++ })
	ql.working(prev)
}

// working counts a lease that lapsed while its holder was still working:
// redelivered after its expiry, and later completed by its holder.
func (ql *queueLedger) working(r *leaseRec) {
	if r.redelivered && r.proven && !r.working {
		r.working = true
		ql.count(r.deadline, r.local, func(c *counters) { c.lapsedWorking++ })
	}
}

// unsnooze takes back the release counted when r reached the end its
// holder had brought forward: the holder acted by its receipt afterwards,
// so it had not given the message up. r is active again, outside the heap,
// and the change that brought the end forward reads as a renewal.
func (ql *queueLedger) unsnooze(r *leaseRec) {
	r.snoozeLapsed, r.snoozed = false, false
	ql.uncount(r.snoozeAt, r.local, func(c *counters) { dec(&c.releases) })
	r.state = leaseActive
	r.msg.relabel(r.epoch, r.snoozeAt)
}

// snoozeOverran turns the release counted when r reached the end its
// holder had brought forward into the lapse it was: the holder came back
// late, after the message was handed on, so it was still working.
func (ql *queueLedger) snoozeOverran(r *leaseRec) {
	ql.unsnooze(r)
	r.state = leaseExpired
	ql.count(r.deadline, r.local, func(c *counters) { c.expired++ })
	r.msg.record(LeaseEvent{At: r.deadline, Kind: EventExpire, Epoch: r.epoch})
	ql.redeliver(r.msg, r.epoch+1)
}

// relabel makes the release with a delay recorded for epoch at at a
// renewal: its holder kept the lease after all.
func (tm *trackedMessage) relabel(epoch uint32, at time.Time) {
	for i := range tm.history {
		if ev := &tm.history[i]; ev.Kind == EventRelease && ev.Epoch == epoch && ev.At.Equal(at) {
			ev.Kind = EventRenew
		}
	}
}

// returned counts a lapsed lease whose holder came back late, once both
// the lapse and the late completion are known, whichever came first.
func (ql *queueLedger) returned(r *leaseRec) {
	if r.state == leaseExpired && r.proven && !r.returned {
		r.returned = true
		ql.count(r.deadline, r.local, func(c *counters) { c.lapsedReturned++ })
	}
}

// purged ends every lease still active at a purge: its message is gone
// with the purge, which is no lapse (the leases that ended before it were
// expired by expire, run before each event).
func (ql *queueLedger) purged(at time.Time) {
	for len(ql.active) > 0 {
		r := ql.active[0]
		ql.end(r, leaseRemoved)
		r.msg.record(LeaseEvent{At: at, Kind: EventRemoved, Epoch: r.epoch})
	}
}

// retained ends the active leases of the messages sent before cutoff: the
// retention sweep deleted them at at, which is no lapse.
func (ql *queueLedger) retained(at, cutoff time.Time) {
	var gone []*leaseRec
	for _, r := range ql.active {
		if sent := r.msg.sentAt; !sent.IsZero() && sent.Before(cutoff) {
			gone = append(gone, r)
		}
	}
	for _, r := range gone {
		ql.end(r, leaseRemoved)
		r.msg.record(LeaseEvent{At: at, Kind: EventRemoved, Epoch: r.epoch})
	}
}

func (ql *queueLedger) end(r *leaseRec, state leaseState) {
	if r.heapIdx >= 0 {
		heap.Remove(&ql.active, r.heapIdx)
	}
	r.state = state
}

// EventKind is what an Event reports.
type EventKind uint8

const (
	KindSent EventKind = iota + 1
	KindReceive
	KindChange
	KindDelete
	KindDeadLetter
	KindForget
	// KindPurge ends the queue's active leases: their messages were purged.
	KindPurge
	// KindRetention ends the active leases of the messages sent before
	// sentAt: the retention sweep deleted them.
	KindRetention
	// KindRemove ends the active lease of one message, which an operator
	// deleted or moved without a receipt (the admin API's message actions).
	KindRemove
)

// Event is one mutation of the ledger, self-contained so that it can
// be applied on any node: the node that handled the request fills in what
// the store told it, and the others apply it as it is. Queue ids are the
// store's and so the same on every node.
type Event struct {
	Kind      EventKind
	QueueID   uint64
	MessageID string
	Epoch     uint32
	At        time.Time
	// Deadline is the lease's end after a receive or change (at or before
	// at: a release).
	Deadline time.Time
	// LeasedAt is when the receipt's lease began (delete, change).
	LeasedAt     time.Time
	ReceiveCount int
	N            int // sent: messages stored
	// SentAt is when the message was sent (receive), or the retention
	// cutoff: messages sent before it were deleted (retention).
	SentAt time.Time
	// Result is what the store found for a delete or change by receipt.
	Result baton.LeaseResult
	// StoreEpoch is the message's current lease epoch in the store (0 if
	// the message was gone).
	StoreEpoch uint32
	// duplicate: a late completion on a message meanwhile leased to
	// another receiver; the handling node decides, from the store's epoch
	// and its ledger.
	duplicate bool
	// Removed: a delete removed the message, ending whatever lease holds it.
	Removed bool
	// Shortened: a change the store found current that moved its lease's
	// end no later than it was (the handling node knows the end from the
	// store). It is a release with a delay, not a renewal (changed).
	Shortened bool
	Client    Client
}

// applyLocal applies an event this node made, deciding the facts that
// depend on what it knows (a late completion's duplicate), and returns the
// event as the other nodes should apply it.
func (l *Ledger) applyLocal(ev Event) Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ev.Kind == KindDelete || ev.Kind == KindChange {
		if ev.Result != baton.LeaseCurrent {
			ev.duplicate = ev.StoreEpoch > ev.Epoch
			if ql, ok := l.queues[ev.QueueID]; ok {
				if tm, ok := ql.messages[ev.MessageID]; ok && tm.latest > ev.Epoch {
					ev.duplicate = true
				}
			}
		}
	}
	l.applyLocked(ev, true)
	return ev
}

// apply applies an event another node made.
func (l *Ledger) apply(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applyLocked(ev, false)
}

func (l *Ledger) applyLocked(ev Event, local bool) {
	if ev.Kind == KindForget {
		if ql, ok := l.queues[ev.QueueID]; ok {
			for _, tm := range ql.messages {
				l.lru.remove(tm)
				l.events -= len(tm.history)
			}
			delete(l.queues, ev.QueueID)
		}
		return
	}
	defer l.trim()
	ql := l.queue(ev.QueueID)
	ql.expire(ev.At)
	switch ev.Kind {
	case KindSent:
		ql.count(ev.At, local, func(c *counters) { c.sent += uint64(ev.N) })
	case KindReceive:
		ql.begin(ev, local)
	case KindChange:
		ql.changed(ev, local)
	case KindDelete:
		ql.completed(ev, local)
	case KindPurge:
		ql.purged(ev.At)
	case KindRetention:
		ql.retained(ev.At, ev.SentAt)
	case KindDeadLetter:
		ql.deadLettered(ev, local)
	case KindRemove:
		ql.removedOne(ev)
	}
}

// removedOne ends the active lease of the message of ev, if any: an
// operator deleted or moved it without a receipt, so the lease neither
// completed nor lapsed.
func (ql *queueLedger) removedOne(ev Event) {
	tm, ok := ql.messages[ev.MessageID]
	if !ok {
		return
	}
	if cur := tm.lease(max(tm.latest, ev.Epoch)); cur.state == leaseActive {
		ql.end(cur, leaseRemoved)
		tm.record(LeaseEvent{At: ev.At, Kind: EventRemoved, Epoch: cur.epoch})
	}
}

// begin applies a receive: a new lease ending at ev.deadline.
func (ql *queueLedger) begin(ev Event, local bool) {
	tm := ql.message(ev.MessageID)
	r := tm.lease(ev.Epoch)
	if r.received {
		return // applied already
	}
	r.received, r.local, r.begin = true, local, ev.At
	if r.deadlineAt.IsZero() { // no renewal arrived before it
		r.deadline, r.deadlineAt = ev.Deadline, ev.At
	}
	tm.latest = max(tm.latest, ev.Epoch)
	if !ev.SentAt.IsZero() {
		tm.sentAt = ev.SentAt
	}
	ql.count(ev.At, local, func(c *counters) { c.received++ })
	tm.record(LeaseEvent{At: ev.At, Kind: EventReceive, Epoch: ev.Epoch, ReceiveCount: ev.ReceiveCount, Deadline: ev.Deadline, Client: ev.Client})
	// The store handed this lease out, so the one before it had ended:
	// lapsed (expire above saw to that), or released early by a release
	// that has not arrived yet.
	if prev := tm.leaseOf(ev.Epoch - 1); prev != nil && prev.state == leaseActive && prev.received {
		ql.end(prev, leaseReleased)
	}
	if r.state == leaseActive && r.heapIdx < 0 {
		if r.deadline.After(ev.At) {
			heap.Push(&ql.active, r)
		} else {
			r.state = leaseReleased // a zero-length lease: the message stayed visible
		}
	}
	ql.redeliver(tm, ev.Epoch)
	ql.redeliver(tm, ev.Epoch+1)
	if r.proven {
		ql.lateFound(tm, r)
	}
}

// lateFound fills in how late the late completions of r came, applied
// before the receive that told the ledger r's deadline.
func (ql *queueLedger) lateFound(tm *trackedMessage, r *leaseRec) {
	isLate := func(kind string) bool { return kind == EventLateDelete || kind == EventLateChange }
	for i := range tm.history {
		if ev := &tm.history[i]; isLate(ev.Kind) && ev.Epoch == r.epoch && ev.Late == 0 {
			ev.Late = ev.At.Sub(r.deadline)
		}
	}
	for i := range ql.recentLate {
		if lc := &ql.recentLate[i]; lc.MessageID == tm.id && lc.Epoch == r.epoch && lc.Late == 0 {
			lc.Late = lc.At.Sub(r.deadline)
		}
	}
}

// completed applies a delete by a receipt. ev.removed says the message was
// deleted: a late delete on a standard queue removes it even though another
// receiver holds it now, which ends that lease too.
func (ql *queueLedger) completed(ev Event, local bool) {
	tm := ql.message(ev.MessageID)
	rec := tm.lease(ev.Epoch)
	if ev.Result != baton.LeaseCurrent && (rec.state == leaseDeleted || rec.lateDeleted) {
		return // a retry of a delete that succeeded, or came late: nothing happened
	}
	if rec.snoozeLapsed {
		if ev.Result == baton.LeaseCurrent {
			ql.unsnooze(rec)
		} else {
			ql.snoozeOverran(rec)
		}
	} else if rec.snoozed && ev.Result == baton.LeaseCurrent {
		rec.snoozed = false // it worked on under the end it set
		tm.relabel(rec.epoch, rec.snoozeAt)
	}
	if rec.state == leaseReleased && rec.received {
		ql.releasedDeleted(tm, rec, ev)
		return
	}
	d := ev.At.Sub(ev.LeasedAt)
	renewed := rec.renewals > 0
	ql.count(ev.At, local, func(c *counters) {
		c.completed++
		c.addDuration(d)
		if !renewed {
			c.unrenewed.add(d)
		}
	})
	ql.countMillis(ev.At, d)
	if ev.Result == baton.LeaseCurrent || removedInTime(rec, ev.At) {
		if rec.state == leaseExpired {
			ql.unexpire(rec)
		}
		ql.end(rec, leaseDeleted)
		tm.record(LeaseEvent{At: ev.At, Kind: EventDelete, Epoch: ev.Epoch, Client: ev.Client})
		return
	}
	ql.late(tm, rec, ev, local, EventLateDelete)
	if !ev.Removed {
		return
	}
	// The lease that held the message when it was removed; if its receive
	// has not arrived, the record made here stops it from starting a lease
	// that would later seem to lapse.
	holder := max(tm.latest, ev.StoreEpoch)
	if holder <= ev.Epoch {
		return
	}
	if cur := tm.lease(holder); cur.state == leaseActive {
		ql.end(cur, leaseRemoved)
		tm.record(LeaseEvent{At: ev.At, Kind: EventRemoved, Epoch: cur.epoch})
	}
}

// releasedDeleted applies a delete by the receipt of a lease its holder
// had given up (a release, or a receive with VisibilityTimeout 0): the
// message was handled, but the lease was no lease of work, so its time
// counts in no lease duration, and a delete after the message was handed
// to another receiver is no late completion: the holder overran nothing.
func (ql *queueLedger) releasedDeleted(tm *trackedMessage, rec *leaseRec, ev Event) {
	if rec.lateDeleted {
		return // a retry
	}
	rec.lateDeleted = true
	tm.record(LeaseEvent{At: ev.At, Kind: EventDelete, Epoch: ev.Epoch, Client: ev.Client})
	if !ev.Removed {
		return
	}
	if holder := max(tm.latest, ev.StoreEpoch); holder > ev.Epoch {
		if cur := tm.lease(holder); cur.state == leaseActive {
			ql.end(cur, leaseRemoved)
			tm.record(LeaseEvent{At: ev.At, Kind: EventRemoved, Epoch: cur.epoch})
		}
	}
}

// changed applies a visibility change by a receipt.
//
// A change to now (VisibilityTimeout 0) is a release: the lease ends here.
// A change that moves the lease's end later is a renewal: the holder
// extends the time it works. A change that brings the end forward to a
// later instant (ev.shortened) is a release with a delay (a snooze, a
// back-off: "not ready, try again in N seconds") if the holder then lets
// that end come and never acts by its receipt again; but a holder may as
// well shorten its lease to go on working under a tighter one. So the
// lease runs on to its new end; if it gets there it counts as released
// then (expire), not lapsed, and the message's next receive is no
// redelivery of a holder that never came back. Should the holder act by
// the receipt afterwards, the release is taken back: a renewal if the
// lease was still current (unsnooze), a lapse while working if the
// message had been handed on (snoozeOverran). A change that gives up by
// setting a delay longer than the lease had left cannot be told from a
// heartbeat: it counts as a renewal, and the lease as lapsed at its end.
func (ql *queueLedger) changed(ev Event, local bool) {
	tm := ql.message(ev.MessageID)
	rec := tm.lease(ev.Epoch)
	if rec.snoozeLapsed {
		if ev.Result == baton.LeaseCurrent {
			ql.unsnooze(rec)
		} else {
			ql.snoozeOverran(rec)
		}
	}
	if ev.Result == baton.LeaseSuperseded {
		// Through an older receipt to the lease of the message's current
		// receive: the older holder is late, and the current lease moves,
		// which is no renewal by its holder.
		if rec.state != leaseDeleted && !removedInTime(rec, ev.At) && (rec.state != leaseReleased || !rec.received) {
			ql.late(tm, rec, ev, local, EventLateChange)
		}
		ql.movedBy(tm.lease(ev.StoreEpoch), ev)
		return
	}
	if ev.Result != baton.LeaseCurrent {
		// After its own delete, or its message's removal, in time, or a
		// lease its holder gave up: no lapse.
		if rec.state != leaseDeleted && !removedInTime(rec, ev.At) && (rec.state != leaseReleased || !rec.received) {
			ql.late(tm, rec, ev, local, EventLateChange)
		}
		return
	}
	if rec.state == leaseExpired {
		ql.unexpire(rec)
	}
	if !ev.Deadline.After(ev.At) {
		if rec.state == leaseActive {
			ql.end(rec, leaseReleased)
		}
		if rec.snoozed {
			rec.snoozed = false
			tm.relabel(rec.epoch, rec.snoozeAt)
		}
		again := false
		if prev := tm.leaseOf(ev.Epoch - 1); !rec.releasedNow && prev != nil && prev.releasedNow {
			again = true
		}
		rec.releasedNow = true
		ql.count(ev.At, local, func(c *counters) {
			c.releases++
			if again {
				c.rereleased++
			}
		})
		tm.record(LeaseEvent{At: ev.At, Kind: EventRelease, Epoch: ev.Epoch, Client: ev.Client})
		return
	}
	kind := EventRenew
	if ev.Shortened && !ev.At.Before(rec.deadlineAt) {
		// A release with a delay, if the holder lets the new end come;
		// the lease runs until then, and expire counts the release.
		kind, rec.snoozed, rec.snoozeAt = EventRelease, true, ev.At
	} else if !ev.Shortened {
		if rec.snoozed && !ev.At.Before(rec.deadlineAt) {
			rec.snoozed = false
			tm.relabel(rec.epoch, rec.snoozeAt)
		}
		rec.renewals++
	}
	if !ev.At.Before(rec.deadlineAt) {
		rec.deadline, rec.deadlineAt = ev.Deadline, ev.At
	}
	if rec.state == leaseActive {
		if rec.heapIdx >= 0 {
			heap.Fix(&ql.active, rec.heapIdx)
		} else {
			heap.Push(&ql.active, rec)
		}
	}
	if !ev.Shortened {
		ql.count(ev.At, local, func(c *counters) { c.renewals++ })
	}
	tm.record(LeaseEvent{At: ev.At, Kind: kind, Epoch: ev.Epoch, Deadline: ev.Deadline, Client: ev.Client})
}

// movedBy moves the end of lease r as a change made through an older
// receipt (ev) did: the store found r live, so an expiry inferred for it is
// taken back; a release ends it.
func (ql *queueLedger) movedBy(r *leaseRec, ev Event) {
	if r.state == leaseExpired {
		ql.unexpire(r)
	}
	if !ev.Deadline.After(ev.At) {
		if r.state == leaseActive {
			ql.end(r, leaseReleased)
		}
		return
	}
	if !ev.At.Before(r.deadlineAt) {
		r.deadline, r.deadlineAt = ev.Deadline, ev.At
	}
	if r.state == leaseActive {
		if r.heapIdx >= 0 {
			heap.Fix(&ql.active, r.heapIdx)
		} else {
			heap.Push(&ql.active, r)
		}
	}
}

// removedInTime says that r's message was removed (a purge, the retention
// sweep, another receiver's late delete) while r was live, and that its
// holder acts by at, before r's deadline: the store no longer has the
// message, but the holder did not overrun its lease.
func removedInTime(r *leaseRec, at time.Time) bool {
	return r.state == leaseRemoved && !r.deadline.IsZero() && !at.After(r.deadline)
}

// late records a late completion: a receipt whose lease had lapsed.
func (ql *queueLedger) late(tm *trackedMessage, rec *leaseRec, ev Event, local bool, kind string) {
	var lateBy time.Duration
	if !rec.deadline.IsZero() {
		lateBy = ev.At.Sub(rec.deadline)
	}
	// However many requests the holder makes with its receipt, its work
	// ran twice once.
	dup := ev.duplicate && !rec.duplicated
	rec.duplicated = rec.duplicated || ev.duplicate
	rec.lateDeleted = rec.lateDeleted || kind == EventLateDelete
	var worked time.Duration
	if !ev.LeasedAt.IsZero() {
		worked = ev.At.Sub(ev.LeasedAt)
	}
	first := !rec.proven
	ql.count(ev.At, local, func(c *counters) {
		c.late++
		if dup {
			c.duplicates++
		}
		if first {
			c.lateLeases++
		}
		c.lateWorked = max(c.lateWorked, worked)
	})
	if first {
		rec.proven = true
		ql.working(rec)
		ql.returned(rec)
	}
	var moved time.Time // the current lease's new end, if the change went through to it
	if ev.Result == baton.LeaseSuperseded {
		moved = ev.Deadline
	}
	tm.record(LeaseEvent{At: ev.At, Kind: kind, Epoch: ev.Epoch, Deadline: moved, Late: lateBy, Duplicate: ev.duplicate, Client: ev.Client})
	if len(ql.recentLate) == maxRecentLate {
		ql.recentLate = append(ql.recentLate[:0], ql.recentLate[1:]...)
	}
	ql.recentLate = append(ql.recentLate, LateCompletion{MessageID: tm.id, At: ev.At, Kind: kind, Epoch: ev.Epoch, Late: lateBy, Duplicate: ev.duplicate, Client: ev.Client})
}

// deadLettered applies a message's move to its dead-letter queue.
func (ql *queueLedger) deadLettered(ev Event, local bool) {
	tm := ql.message(ev.MessageID)
	ql.end(tm.lease(ev.Epoch), leaseDeadLettered)
	ql.count(ev.At, local, func(c *counters) { c.deadLettered++ })
	tm.record(LeaseEvent{At: ev.At, Kind: EventDeadLetter, Epoch: ev.Epoch, ReceiveCount: ev.ReceiveCount})
}

// history returns a copy of a message's events.
func (l *Ledger) history(queueID uint64, messageID string, now time.Time) ([]LeaseEvent, bool) {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	tm, ok := ql.messages[messageID]
	if !ok {
		return nil, false
	}
	return append([]LeaseEvent(nil), tm.history...), true
}

// snapshot returns the queue's counters since start and over the window.
func (l *Ledger) snapshot(queueID uint64, now time.Time) (total, window counters) {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	total = ql.total
	total.durations = cloneHist(ql.total.durations)
	total.unrenewed = cloneHist(ql.total.unrenewed)
	return total, ql.windowed(now)
}

// pendingLapsed counts the lapsed leases whose holder has not come back but
// still may: leases begun within the last `within`, as long as holders were
// seen working before coming back late.
func (l *Ledger) pendingLapsed(queueID uint64, now time.Time, within time.Duration) uint64 {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	var n uint64
	since := now.Add(-within)
	for _, tm := range ql.messages {
		for _, r := range tm.leases {
			if r.state == leaseExpired && !r.proven && r.received && r.begin.After(since) {
				n++
			}
		}
	}
	return n
}

// hungLeases returns the running leases held more than threshold, renewed
// at least minHungRenewals times, the last time after they had been held
// p99: held far beyond the p99 and still renewed. Longest held first.
func (l *Ledger) hungLeases(queueID uint64, now time.Time, threshold, p99 time.Duration) []HungLease {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	var out []HungLease
	for _, r := range ql.active {
		if !r.received || r.renewals < minHungRenewals || now.Sub(r.begin) <= threshold || r.deadlineAt.Sub(r.begin) <= p99 {
			continue
		}
		out = append(out, HungLease{
			MessageID: r.msg.id, Epoch: r.epoch, Begin: r.begin, Held: now.Sub(r.begin), Renewals: r.renewals,
			LastRenewal: r.deadlineAt, Deadline: r.deadline, CeilingIn: max(r.begin.Add(MaxLeaseTime).Sub(now), 0),
			Client: r.msg.receiver(r.epoch),
		})
	}
	slices.SortFunc(out, func(a, b HungLease) int { return a.Begin.Compare(b.Begin) })
	return out
}

// completedP99 returns the p99 of the queue's completed leases since start,
// and how many there are.
func (l *Ledger) completedP99(queueID uint64, now time.Time) (time.Duration, uint64) {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	return ql.total.durations.quantile(0.99), ql.total.durations.n
}

// oldestLease returns when the oldest running lease began, zero if none.
func (l *Ledger) oldestLease(queueID uint64, now time.Time) time.Time {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	var oldest time.Time
	for _, r := range ql.active {
		if r.received && (oldest.IsZero() || r.begin.Before(oldest)) {
			oldest = r.begin
		}
	}
	return oldest
}

// receiver is the client whose receive began lease epoch.
func (tm *trackedMessage) receiver(epoch uint32) Client {
	for i := len(tm.history) - 1; i >= 0; i-- {
		if ev := tm.history[i]; ev.Kind == EventReceive && ev.Epoch == epoch {
			return ev.Client
		}
	}
	return Client{}
}

// lockedQueue locks the ledger and returns queue id's ledger with its
// expiries inferred up to now; the caller unlocks l.mu.
func (l *Ledger) lockedQueue(id uint64, now time.Time) *queueLedger {
	l.mu.Lock()
	ql := l.queue(id)
	ql.expire(now)
	l.trim()
	return ql
}

// owned returns the queue's counters of what this node originated since it
// started (queueLedger.own), for metrics that are summed over nodes. The
// counts never go down from one call to the next (see ownExpiredShown).
func (l *Ledger) owned(queueID uint64, now time.Time) counters {
	ql := l.lockedQueue(queueID, now)
	defer l.mu.Unlock()
	own := ql.own
	own.expired = max(own.expired, ql.ownExpiredShown)
	ql.ownExpiredShown = own.expired
	own.durations = cloneHist(ql.own.durations)
	own.unrenewed = cloneHist(ql.own.unrenewed)
	return own
}

func cloneHist(h histogram) histogram {
	c := histogram{n: h.n, max: h.max, counts: make(map[int]uint64, len(h.counts))}
	for k, v := range h.counts {
		c.counts[k] = v
	}
	return c
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
