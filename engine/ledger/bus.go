package ledger

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/ids"
)

// Several nodes on one shared store keep one lease ledger between them:
// when the store is a baton.LedgerBus, every event a node applies to its
// ledger is also queued for the others. A publisher goroutine gathers the
// queued events into batches of at most baton.MaxLedgerBatch bytes and
// publishes a batch when it would grow past that or ledgerFlushEvery after
// its first event, whichever comes first, so a request never waits on the
// network. Each Ledger draws a random node id and drops its own batches when
// the store echoes them back. A node numbers its batches in turn; an
// exchange the bus refuses is tried again with its batches, in order,
// before any later, as long as they are few (ledgerKeptBatches), and a
// node that gets a batch twice (the first try's outcome was lost) applies
// it once. Events are lost, not delayed, when the queue is full, the
// store's link stays down, or a node's own link to the bus is down: the
// ledger is a diagnosis, not a record of truth, and a node that learns it
// missed events (a jump in a node's numbers, the bus's word that its link
// was down) says so instead of a verdict on the period (missed.go).

const (
	// ledgerFlushEvery bounds how long an event waits for its batch.
	ledgerFlushEvery = 100 * time.Millisecond
	// ledgerQueueLen bounds the events waiting for the publisher.
	ledgerQueueLen = 8192
	// ledgerExchangeBatches bounds the batches published in one exchange
	// with the bus: full batches gathered while the last exchange was under
	// way go together, so a busy node pays one round trip for many.
	ledgerExchangeBatches = 16
	// ledgerPublishTimeout bounds one publication.
	ledgerPublishTimeout = 5 * time.Second
	// ledgerKeptBatches bounds the batches kept to publish again after the
	// bus refused them; beyond it the oldest are dropped, and the other
	// nodes learn of the gap by the batches' numbers.
	ledgerKeptBatches = 4 * ledgerExchangeBatches
	// ledgerRetryMax bounds the pause before an exchange the bus refused
	// is tried again; the first is ledgerFlushEvery, doubled each time.
	ledgerRetryMax = 5 * time.Second
	// maxEventClient bounds a client's address and user agent in an event.
	maxEventClient = 160

	// batchVersion 2 added the second flags byte and the batch id (Event's
	// Batch and Progress); 3, the batch's number in its node's turn. A
	// node reads batches of versions 1 and 2 too, and a node of an older
	// version drops this one's batches with a warning.
	batchVersion = 3
	batchHeader  = 1 + 8 + 8 // version, node id, number (big endian)
	// batchHeaderV2 is the header of versions 1 and 2: version, node id.
	batchHeaderV2 = 1 + 8
)

// Config configures a Ledger.
type Config struct {
	// Clock is the node's: other nodes' events are shown in its zone.
	// Defaults to the system clock.
	Clock clock.Clock
	// Started is when the node's ledger begins: the HistorySince of its
	// reports.
	Started time.Time
	// Bus, if set, relays the ledger's events between the nodes of a store
	// several nodes share.
	Bus    baton.LedgerBus
	Logger *slog.Logger
}

// New returns an empty ledger. With a Bus it joins the other nodes' ledgers:
// it subscribes to the bus and starts publishing its own events, until
// Close.
func New(cfg Config) *Ledger {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := &Ledger{started: cfg.Started, clock: cfg.Clock, log: cfg.Logger, node: ids.NewUint64()}
	if cfg.Bus != nil {
		l.publisher = newLedgerPublisher(cfg.Bus, l.node, l.log)
		cfg.Bus.SubscribeLedger(l.deliver)
		l.publisher.Start(context.Background())
	}
	return l
}

// Close publishes the events not yet sent to the other nodes, those the
// bus refused before too, once more, and stops publishing.
func (l *Ledger) Close() {
	if l.publisher != nil {
		l.publisher.Stop()
	}
}

// Record applies an event this node made to its ledger and queues it for
// the other nodes.
func (l *Ledger) Record(ev Event) {
	ev, ok := l.applyLocal(ev)
	if ok && l.publisher != nil {
		l.publisher.queue(ev)
	}
}

// deliver is the ledger's subscription to the bus: a batch, or the bus's
// word on batches that may have been lost (baton.LedgerGap).
func (l *Ledger) deliver(b []byte, gap baton.LedgerGap) {
	switch gap {
	case baton.LedgerNoGap:
		l.applyBatch(b)
	case baton.LedgerLinkLostAlone:
		l.linkLost(false)
	case baton.LedgerLinkDown:
		l.missed.linkDown(l.started)
	default:
		l.linkLost(true)
	}
}

// linkLost notes the bus's word that its link was down: a gap, unless no
// other node was connected once it was up again (others false) and none
// was ever heard from.
func (l *Ledger) linkLost(others bool) {
	now := l.clock.Now()
	if !others && !l.missed.heardOthers() {
		l.missed.linkUp(now)
		l.log.Info("lease-ledger link to the other nodes was down; no other server is connected to the database and none was ever heard from, so this node judges as one alone (one that published and stopped meanwhile would go unseen)")
		return
	}
	l.missed.linkLost(l.started, now)
	l.log.Warn("lease-ledger batches of other nodes may have been lost while the link to them was down; lease reports judged on that time say so instead of a verdict")
}

// applyBatch applies a batch the bus delivered, unless this node
// published it: its own batches, which the bus echoes back, are told by
// their header and dropped without being decoded.
func (l *Ledger) applyBatch(b []byte) {
	now := l.clock.Now()
	if node, ok := batchNode(b); ok && node == l.node {
		l.missed.delivered(now)
		return
	}
	node, evs, err := decodeBatch(b)
	if err != nil {
		// A node of another version keeps sending them: say so now and then.
		if n := l.badBatches.Add(1); n == 1 || n%1000 == 0 {
			l.log.Warn("dropped malformed lease-ledger batches", "err", err, "bytes", len(b), "dropped", n)
		}
		return
	}
	if seq, ok := batchSeq(b); !ok {
		l.missed.deliveredFrom(now)
	} else if !l.missed.admit(node, seq, now) {
		return // applied before
	}
	// Times travel as Unix nanoseconds; show them in the zone of this
	// node's own, so that one history does not mix zones.
	loc := now.Location()
	for _, ev := range evs {
		ev.At, ev.Deadline, ev.LeasedAt = inZone(ev.At, loc), inZone(ev.Deadline, loc), inZone(ev.LeasedAt, loc)
		ev.SentAt = inZone(ev.SentAt, loc)
		l.apply(ev)
	}
}

func inZone(t time.Time, loc *time.Location) time.Time {
	if t.IsZero() {
		return t
	}
	return t.In(loc)
}

// ledgerPublisher batches a node's ledger events onto a baton.LedgerBus.
type ledgerPublisher struct {
	bus   baton.LedgerBus
	node  uint64
	log   *slog.Logger
	every time.Duration
	// maxBatch is baton.MaxLedgerBatch; tests lower it.
	maxBatch int

	events  chan Event
	stop    chan struct{}
	done    chan struct{}
	dropped atomic.Uint64
	// seq numbers the batches: the last one made. An event dropped
	// takes a number too, so that the other nodes see the gap.
	seq atomic.Uint64
	// keptDropped: batches kept to publish again were dropped since the
	// bus last took an exchange (keep); run's alone.
	keptDropped bool
	// stopping: the last exchange, as the publisher stops, is under way;
	// run's alone.
	stopping bool
}

func newLedgerPublisher(bus baton.LedgerBus, node uint64, log *slog.Logger) *ledgerPublisher {
	return &ledgerPublisher{
		bus: bus, node: node, log: log, every: ledgerFlushEvery, maxBatch: baton.MaxLedgerBatch,
		events: make(chan Event, ledgerQueueLen),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
}

// queue hands ev to the publisher without waiting; it drops the event when
// the publisher is that far behind, or stopped.
func (p *ledgerPublisher) queue(ev Event) {
	select {
	case <-p.stop:
		return
	default:
	}
	select {
	case p.events <- ev:
	default:
		p.seq.Add(1)
		if p.dropped.Add(1) == 1 {
			p.log.Warn("lease-ledger events are dropped: the publisher is behind; other nodes' lease reports miss them")
		}
	}
}

// Start runs the publisher until Stop.
func (p *ledgerPublisher) Start(ctx context.Context) {
	go p.run(ctx)
}

// Stop publishes what is queued, with what the bus refused before, once
// more, and stops the publisher; it says what the bus refused then.
func (p *ledgerPublisher) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

func (p *ledgerPublisher) run(ctx context.Context) {
	defer close(p.done)
	r := &publishing{p: p, ctx: ctx, batch: p.header()}
	for {
		select {
		case ev := <-p.events:
			r.add(ev)
		case <-r.due:
			r.timer, r.due = nil, nil
			r.flush(true)
		case <-p.stop:
		drain:
			for {
				select {
				case ev := <-p.events:
					r.add(ev)
				default:
					break drain
				}
			}
			p.stopping = true
			r.flush(true)
			p.droppedAtStop(len(r.ready))
			return
		case <-ctx.Done():
			return
		}
	}
}

// publishing is the state of a publisher's run: the batch being filled,
// the full ones waiting, and the timer that publishes them.
type publishing struct {
	p     *ledgerPublisher
	ctx   context.Context
	batch []byte
	// ready are full batches waiting for the next exchange with the bus.
	ready [][]byte
	timer *time.Timer
	due   <-chan time.Time
	// retryIn, while an exchange the bus refused waits to be tried
	// again, is the pause before that: ready holds its batches.
	retryIn time.Duration
	enc     []byte // one event's encoding, its buffer reused
}

// add encodes ev into the batch, which goes to ready when ev does not fit;
// a full exchange of ready batches is published at once unless the bus is
// refusing.
func (r *publishing) add(ev Event) {
	r.enc = appendEvent(r.enc[:0], ev)
	if len(r.batch)+len(r.enc) > r.p.maxBatch {
		r.ready = append(r.ready, r.batch)
		r.batch = r.p.header()
		switch {
		case r.retryIn > 0:
			r.ready = r.p.keep(r.ready) // the bus refuses: wait for the retry
		case len(r.ready) >= ledgerExchangeBatches:
			r.flush(false)
		}
	}
	r.batch = append(r.batch, r.enc...)
	if r.timer == nil {
		r.arm(r.p.every)
	}
}

// flush publishes the ready batches, and with all the partial one too, in
// exchanges of at most ledgerExchangeBatches; an exchange the bus refuses
// keeps its batches and the rest in ready, to be tried again after a pause
// (retryIn).
func (r *publishing) flush(all bool) {
	if r.timer != nil {
		r.timer.Stop()
		r.timer, r.due = nil, nil
	}
	if all && len(r.batch) > batchHeader {
		r.ready = append(r.ready, r.batch)
		r.batch = r.p.header()
	}
	refused := false
	for len(r.ready) > 0 && !refused {
		n := min(len(r.ready), ledgerExchangeBatches)
		if refused = !r.p.publish(r.ctx, r.ready[:n]); !refused {
			r.ready = r.ready[n:]
		}
	}
	wait := r.p.every
	if refused {
		r.ready = r.p.keep(r.ready)
		r.retryIn = min(max(2*r.retryIn, r.p.every), ledgerRetryMax)
		wait = r.retryIn
	} else {
		r.ready, r.retryIn = nil, 0
		r.p.keptDropped = false
	}
	if len(r.batch) > batchHeader || len(r.ready) > 0 {
		r.arm(wait)
	}
}

// arm sets the timer that publishes what waits.
func (r *publishing) arm(wait time.Duration) {
	r.timer = time.NewTimer(wait)
	r.due = r.timer.C
}

// header starts the next batch, with its number.
func (p *ledgerPublisher) header() []byte {
	b := make([]byte, batchHeader, p.maxBatch)
	b[0] = batchVersion
	binary.BigEndian.PutUint64(b[1:], p.node)
	binary.BigEndian.PutUint64(b[9:], p.seq.Add(1))
	return b
}

// publish hands batches to the bus; it reports whether the bus took them.
func (p *ledgerPublisher) publish(ctx context.Context, batches [][]byte) bool {
	ctx, cancel := context.WithTimeout(ctx, ledgerPublishTimeout)
	defer cancel()
	if err := p.bus.PublishLedger(ctx, batches); err != nil {
		if !p.stopping {
			p.log.Warn("could not publish lease-ledger events; they are tried again, and reach the other nodes late meanwhile",
				"err", err, "batches", len(batches))
		} else {
			p.log.Warn("could not publish lease-ledger events as this node stops", "err", err, "batches", len(batches))
		}
		return false
	}
	return true
}

// droppedAtStop says that n batches, which the bus refused the last time
// they were tried as the publisher stopped, are dropped. No later batch of
// this node shows the other nodes the gap in its numbers, so they cannot
// say they missed them.
func (p *ledgerPublisher) droppedAtStop(n int) {
	if n > 0 {
		p.log.Warn("lease-ledger batches dropped as this node stops: the bus refused them; the other nodes never learn they missed them, so their lease reports may judge leases on events missing (a lease whose delete was among them reads as lapsed)",
			"batches", n)
	}
}

// keep bounds the batches waiting to be tried again to ledgerKeptBatches,
// dropping the oldest: the other nodes see the gap in their numbers. It
// says so once while the bus refuses.
func (p *ledgerPublisher) keep(ready [][]byte) [][]byte {
	if over := len(ready) - ledgerKeptBatches; over > 0 {
		if !p.keptDropped {
			p.keptDropped = true
			p.log.Warn("lease-ledger batches dropped: the bus refuses them for too long; the other nodes' lease reports say they missed them once a later batch of this node reaches them")
		}
		ready = append(ready[:0], ready[over:]...)
	}
	return ready
}

// The batch encoding: a version byte and the node id (8 bytes, big
// endian), then events, each:
//
//	kind(1) flags(1) queueID(uvarint) message id (16 bytes when a UUID,
//	else uvarint length and bytes) epoch(uvarint) at(varint Unix ns)
//	[deadline-at (varint ns)] [leasedAt-at (varint ns)] [sentAt-at (varint
//	ns)] receiveCount(uvarint)
//	n(uvarint) result(1) storeEpoch(uvarint) addr, userAgent (uvarint
//	length and bytes) flags2(1, version 2) [batch(uvarint)]
//
// Bracketed fields are present when their flag is set.
const (
	flagUUID = 1 << iota
	flagDeadline
	flagLeasedAt
	flagDuplicate
	flagRemoved
	flagSentAt
	// flagShortened: a visibility change that brought its lease's end
	// forward (Event.Shortened).
	flagShortened
)

// The flags of the second flags byte (version 2).
const (
	// flag2Progress: a renewal made on the handler's progress
	// (Event.Progress).
	flag2Progress = 1 << iota
	flag2Batch
	// flag2QueueTimeout: a receive leased for the queue's VisibilityTimeout
	// (Event.QueueTimeout). A node of an earlier build neither sets nor
	// reads it: its receives read as asking for their lease's length.
	flag2QueueTimeout
	// flag2FIFO: a delete on a FIFO queue (Event.FIFO). A node of an
	// earlier build neither sets nor reads it: its deletes read as a
	// standard queue's.
	flag2FIFO
	// flag2Replay: a change a replayed FIFO receive made (Event.Replay).
	// A node of an earlier build reads it as a renewal.
	flag2Replay
	// flag2ClientLeft: a receive whose answer reached no client
	// (Event.ClientLeft). A node of an earlier build reads it as a lease
	// its client held, and a receive told again with it, its answer lost
	// after it was recorded (answer.go), as one applied already.
	flag2ClientLeft
	// flag2Unanswered: a delete or visibility change the store did not
	// answer (Event.Unanswered), sent as KindSeen. A node of an earlier
	// build reads it as its client seen.
	flag2Unanswered
	// flag2Answering: a receive whose answer is still to be written
	// (Event.Answering). A node of an earlier build reads it as its
	// client seen.
	flag2Answering
)

func appendEvent(b []byte, ev Event) []byte {
	var flags byte
	uuid, isUUID := ids.ParseUUID(ev.MessageID)
	if isUUID && ids.FormatUUID(uuid) == ev.MessageID {
		flags |= flagUUID
	}
	if !ev.Deadline.IsZero() {
		flags |= flagDeadline
	}
	if !ev.LeasedAt.IsZero() {
		flags |= flagLeasedAt
	}
	if ev.duplicate {
		flags |= flagDuplicate
	}
	if ev.Removed {
		flags |= flagRemoved
	}
	if !ev.SentAt.IsZero() {
		flags |= flagSentAt
	}
	if ev.Shortened {
		flags |= flagShortened
	}
	b = append(b, byte(ev.Kind), flags)
	b = binary.AppendUvarint(b, ev.QueueID)
	if flags&flagUUID != 0 {
		b = append(b, uuid[:]...)
	} else {
		b = appendString(b, ev.MessageID, len(ev.MessageID))
	}
	b = binary.AppendUvarint(b, uint64(ev.Epoch))
	at := ev.At.UnixNano()
	b = binary.AppendVarint(b, at)
	if flags&flagDeadline != 0 {
		b = binary.AppendVarint(b, ev.Deadline.UnixNano()-at)
	}
	if flags&flagLeasedAt != 0 {
		b = binary.AppendVarint(b, ev.LeasedAt.UnixNano()-at)
	}
	if flags&flagSentAt != 0 {
		b = binary.AppendVarint(b, ev.SentAt.UnixNano()-at)
	}
	b = binary.AppendUvarint(b, uint64(max(ev.ReceiveCount, 0)))
	b = binary.AppendUvarint(b, uint64(max(ev.N, 0)))
	b = append(b, byte(ev.Result))
	b = binary.AppendUvarint(b, uint64(ev.StoreEpoch))
	b = appendString(b, ev.Client.Addr, maxEventClient)
	b = appendString(b, ev.Client.UserAgent, maxEventClient)
	var flags2 byte
	if ev.Progress {
		flags2 |= flag2Progress
	}
	if ev.Batch != 0 {
		flags2 |= flag2Batch
	}
	if ev.QueueTimeout {
		flags2 |= flag2QueueTimeout
	}
	if ev.FIFO {
		flags2 |= flag2FIFO
	}
	if ev.Replay {
		flags2 |= flag2Replay
	}
	if ev.ClientLeft {
		flags2 |= flag2ClientLeft
	}
	if ev.Unanswered {
		flags2 |= flag2Unanswered
	}
	if ev.Answering {
		flags2 |= flag2Answering
	}
	b = append(b, flags2)
	if ev.Batch != 0 {
		b = binary.AppendUvarint(b, ev.Batch)
	}
	return b
}

// appendString appends at most limit bytes of s, length first.
func appendString(b []byte, s string, limit int) []byte {
	s = s[:min(len(s), limit)]
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errBadBatch = errors.New("malformed lease-ledger batch")

// batchNode is the node id in a batch's header, if it has one.
func batchNode(b []byte) (uint64, bool) {
	if len(b) < batchHeaderV2 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[1:]), true
}

// batchSeq is a batch's number in its node's turn, if it has one (version
// 3 on).
func batchSeq(b []byte) (uint64, bool) {
	if len(b) < batchHeader || b[0] < 3 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[9:]), true
}

// headerLen is the length of the header of a batch of version v.
func headerLen(v byte) int {
	if v < 3 {
		return batchHeaderV2
	}
	return batchHeader
}

// decodeBatch decodes a batch made by appendEvent after a header.
func decodeBatch(b []byte) (node uint64, evs []Event, err error) {
	if len(b) < 1 || b[0] < 1 || b[0] > batchVersion || len(b) < headerLen(b[0]) {
		return 0, nil, errBadBatch
	}
	node, _ = batchNode(b)
	d := decoder{b: b[headerLen(b[0]):], version: b[0]}
	for len(d.b) > 0 && d.err == nil {
		ev := d.event()
		if d.err == nil {
			evs = append(evs, ev)
		}
	}
	if d.err != nil {
		return 0, nil, d.err
	}
	return node, evs, nil
}

type decoder struct {
	b       []byte
	err     error
	version byte
}

func (d *decoder) event() Event {
	var ev Event
	kind, flags := d.byte(), d.byte()
	ev.Kind = EventKind(kind)
	if d.err == nil && (ev.Kind < KindSent || ev.Kind > KindSeen) {
		d.err = errBadBatch
	}
	ev.QueueID = d.uvarint()
	if flags&flagUUID != 0 {
		var u [16]byte
		copy(u[:], d.bytes(16))
		ev.MessageID = ids.FormatUUID(u)
	} else {
		ev.MessageID = d.string(-1)
	}
	ev.Epoch = uint32(d.uvarint())
	at := d.varint()
	ev.At = time.Unix(0, at).UTC()
	if flags&flagDeadline != 0 {
		ev.Deadline = time.Unix(0, at+d.varint()).UTC()
	}
	if flags&flagLeasedAt != 0 {
		ev.LeasedAt = time.Unix(0, at+d.varint()).UTC()
	}
	if flags&flagSentAt != 0 {
		ev.SentAt = time.Unix(0, at+d.varint()).UTC()
	}
	ev.ReceiveCount = int(min(d.uvarint(), 1<<31))
	ev.N = int(min(d.uvarint(), 1<<31))
	ev.Result = baton.LeaseResult(d.byte())
	ev.StoreEpoch = uint32(d.uvarint())
	ev.Client.Addr = d.string(maxEventClient)
	ev.Client.UserAgent = d.string(maxEventClient)
	ev.duplicate = flags&flagDuplicate != 0
	ev.Removed = flags&flagRemoved != 0
	ev.Shortened = flags&flagShortened != 0
	if d.version >= 2 {
		flags2 := d.byte()
		ev.Progress = flags2&flag2Progress != 0
		ev.QueueTimeout = flags2&flag2QueueTimeout != 0
		ev.FIFO = flags2&flag2FIFO != 0
		ev.Replay = flags2&flag2Replay != 0
		ev.ClientLeft = flags2&flag2ClientLeft != 0
		ev.Unanswered = flags2&flag2Unanswered != 0
		ev.Answering = flags2&flag2Answering != 0
		if flags2&flag2Batch != 0 {
			ev.Batch = d.uvarint()
		}
	}
	return ev
}

func (d *decoder) byte() byte {
	if p := d.bytes(1); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errBadBatch
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errBadBatch
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errBadBatch
		return 0
	}
	d.b = d.b[n:]
	return v
}

// string reads a string appendString wrote; one longer than limit (when
// limit is not negative) no sender writes, so the batch is malformed.
func (d *decoder) string(limit int) string {
	n := d.uvarint()
	if n > uint64(len(d.b)) || limit >= 0 && n > uint64(limit) {
		d.err = errBadBatch
		return ""
	}
	return string(d.bytes(int(n)))
}
