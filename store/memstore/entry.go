package memstore

import (
	"math"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
)

// An index of millions of messages is mostly entries, so an entry is kept
// small (96 bytes) and free of pointers, in its queue's slab (slab.go):
// times as Unix nanoseconds, the id as its 16 bytes when it is a UUID (the
// engine's), the timelines and the groups linked through the entries
// themselves by ref, the group and the sender as indexes into their
// queue's tables, and whatever most messages of the durable store lack
// (body, attributes, FIFO fields) out of line in an extra, 0 when empty.

// entry is one message in its queue's index.
type entry struct {
	// uuid is the id, parsed, unless fStrID (then the extra's id is the
	// id).
	uuid                                       [16]byte
	sentAt, visibleAt, firstReceived, leasedAt int64 // nanos(t)
	// key is the durable store's for the message (Store.SetKey).
	key uint64
	// links are the entry's places in two chains: its timeline's list
	// (inList; also a chunk's free slots, by next) and its group
	// (inGroup).
	links        [2]link
	g            uint32 // in queueState.groupTab
	x            uint32 // in queueState.extras, or 0
	heapIdx      int32  // in its timeline's late heap, or -1
	receiveCount int32
	epoch        uint32
	// sender is the SenderID: "" if 0, qs.senders[sender-1] up to
	// maxSenders, the extra's sender if senderInExtra.
	sender uint8
	flags  uint8
}

// Entry flags.
const (
	fLive   = 1 << iota // handed out by the slab
	fLeased             // Message.Leased
	fReady              // in the ready timeline
	fHidden             // in the hidden timeline
	fStrID              // the id is not a UUID
)

func (e *entry) is(f uint8) bool { return e.flags&f != 0 }

// extra holds what the messages of the durable store's index mostly lack.
type extra struct {
	id, body, bodyMD5, trace, dedupID, seq, sender, deadLetterSource string
	attrs                                                            map[string]baton.MessageAttribute
}

// Senders beyond maxSenders distinct ones in a queue are kept in the extra.
const (
	maxSenders    = 254
	senderInExtra = 255
)

// zeroNanos stands for the zero time, before every other.
const zeroNanos = math.MinInt64

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return zeroNanos
	}
	return t.UnixNano()
}

func timeOf(n int64) time.Time {
	if n == zeroNanos {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// table holds the groups or extras that entries name by a uint32: 0 is
// none, and a freed number is given out again.
type table[T any] struct {
	vals []*T
	free []uint32
}

func (t *table[T]) get(i uint32) *T {
	if i == 0 {
		return nil
	}
	return t.vals[i]
}

func (t *table[T]) put(v *T) uint32 {
	if n := len(t.free); n > 0 {
		i := t.free[n-1]
		t.free = t.free[:n-1]
		t.vals[i] = v
		return i
	}
	if len(t.vals) == 0 {
		t.vals = append(t.vals, nil)
	}
	t.vals = append(t.vals, v)
	return uint32(len(t.vals) - 1)
}

func (t *table[T]) drop(i uint32) {
	t.vals[i] = nil
	t.free = append(t.free, i)
}

// extraOf returns e's extra, making it if need be.
func (qs *queueState) extraOf(e *entry) *extra {
	if e.x == 0 {
		e.x = qs.extras.put(&extra{})
	}
	return qs.extras.get(e.x)
}

// id returns the message id of e.
func (qs *queueState) id(e *entry) string {
	if e.is(fStrID) {
		return qs.extras.get(e.x).id
	}
	return ids.FormatUUID(e.uuid)
}

// newEntry makes the entry of m, copying m's attributes; add puts it in
// the queue.
func (qs *queueState) newEntry(m *baton.Message) ref {
	r := qs.es.alloc()
	e := qs.es.at(r)
	e.sentAt, e.visibleAt, e.firstReceived, e.leasedAt = nanos(m.SentAt), nanos(m.VisibleAt), nanos(m.FirstReceivedAt), nanos(m.LeasedAt)
	e.heapIdx, e.receiveCount, e.epoch = -1, int32(min(m.ReceiveCount, math.MaxInt32)), m.Epoch
	if m.Leased {
		e.flags |= fLeased
	}
	if k, ok := ids.ParseUUID(m.ID); ok {
		e.uuid = k
	} else {
		e.flags |= fStrID
		qs.extraOf(e).id = m.ID
	}
	if m.Body != "" || m.BodyMD5 != "" || m.TraceHeader != "" || m.DedupID != "" || m.SequenceNumber != "" || m.DeadLetterSourceARN != "" || m.Attributes != nil {
		x := qs.extraOf(e)
		x.body, x.bodyMD5, x.trace, x.dedupID, x.seq, x.deadLetterSource = m.Body, m.BodyMD5, m.TraceHeader, m.DedupID, m.SequenceNumber, m.DeadLetterSourceARN
		x.attrs = cloneAttributes(m.Attributes)
	}
	qs.setSender(e, m.SenderID)
	return r
}

// setSender records the entry's SenderID in qs's table of senders.
func (qs *queueState) setSender(e *entry, sender string) {
	if x := qs.extras.get(e.x); x != nil {
		x.sender = ""
	}
	if sender == "" {
		e.sender = 0
		return
	}
	if i, ok := qs.senderIdx[sender]; ok {
		e.sender = i
		return
	}
	if len(qs.senders) < maxSenders {
		if qs.senderIdx == nil {
			qs.senderIdx = make(map[string]uint8)
		}
		qs.senders = append(qs.senders, sender)
		e.sender = uint8(len(qs.senders))
		qs.senderIdx[sender] = e.sender
		return
	}
	e.sender = senderInExtra
	qs.extraOf(e).sender = sender
}

func (qs *queueState) senderOf(e *entry) string {
	switch e.sender {
	case 0:
		return ""
	case senderInExtra:
		return qs.extras.get(e.x).sender
	}
	return qs.senders[e.sender-1]
}

// message returns e as a Message whose id is id (e's, which the caller
// has at hand). Its attributes are e's own: callers only read them.
func (qs *queueState) message(e *entry, id string) baton.Message {
	m := baton.Message{
		ID: id, GroupID: qs.groupTab.get(e.g).id, SenderID: qs.senderOf(e),
		SentAt: timeOf(e.sentAt), VisibleAt: timeOf(e.visibleAt), Leased: e.is(fLeased),
		ReceiveCount: int(e.receiveCount), FirstReceivedAt: timeOf(e.firstReceived), Epoch: e.epoch,
		LeasedAt: timeOf(e.leasedAt),
	}
	if x := qs.extras.get(e.x); x != nil {
		m.Body, m.BodyMD5, m.Attributes, m.TraceHeader, m.DedupID = x.body, x.bodyMD5, x.attrs, x.trace, x.dedupID
		m.SequenceNumber, m.DeadLetterSourceARN = x.seq, x.deadLetterSource
	}
	return m
}

// group is the messages of one GroupID in send order.
type group struct {
	id  string
	idx uint32 // in queueState.groupTab
	chain
	n int
	// inflight counts the group's messages in flight (leased and hidden),
	// for a fair queue's noisy tenants (groups.go).
	inflight int
	// oprev and onext link the queue's ring of groups.
	oprev, onext *group
	// On a FIFO queue (fifoorder.go): key is the group's place in the
	// queue's order, orderAt its index in the order's heap plus one (0:
	// not in it), dirty that a message of it changed since.
	key     groupKey
	orderAt int
	dirty   bool
	// maxSent is the latest send time of a message added (once sent is
	// set), and lag how far before maxSent a message added since was
	// sent at most. Arrival order is then send order give or take lag,
	// which lets a browse stop early (browse.go). Neither shrinks when
	// messages leave.
	sent         bool
	maxSent, lag int64
}

func (g *group) pushBack(es *slab, r ref) {
	e := es.at(r)
	e.g = g.idx
	switch {
	case !g.sent || e.sentAt > g.maxSent:
		g.sent, g.maxSent = true, e.sentAt
	case g.maxSent-e.sentAt < 0: // overflow: as far as can be
		g.lag = math.MaxInt64
	default:
		g.lag = max(g.lag, g.maxSent-e.sentAt)
	}
	g.chain.pushBack(es, inGroup, r)
	g.n++
}

func (g *group) remove(es *slab, r ref) {
	g.chain.remove(es, inGroup, r)
	g.n--
}

// link is an entry's place in a chain.
type link struct{ prev, next ref }

// Which of an entry's links a chain uses.
const (
	inList = iota
	inGroup
)

// chain is a doubly linked list of entries, through their links[k] for
// one k.
type chain struct{ head, tail ref }

// pushBack appends r.
func (c *chain) pushBack(es *slab, k int, r ref) {
	es.at(r).links[k] = link{prev: c.tail}
	if c.tail != none {
		es.at(c.tail).links[k].next = r
	} else {
		c.head = r
	}
	c.tail = r
}

// remove unlinks r.
func (c *chain) remove(es *slab, k int, r ref) {
	l := &es.at(r).links[k]
	if l.prev != none {
		es.at(l.prev).links[k].next = l.next
	} else {
		c.head = l.next
	}
	if l.next != none {
		es.at(l.next).links[k].prev = l.prev
	} else {
		c.tail = l.prev
	}
	*l = link{}
}

// nextIn returns the entry after r in chain k, or none.
func nextIn(es *slab, k int, r ref) ref { return es.at(r).links[k].next }
