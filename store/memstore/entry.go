package memstore

import (
	"container/heap"
	"math"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/leaf/ids"
)

// An index of millions of messages is mostly entries, so an entry is kept
// small (112 bytes): times as Unix nanoseconds, the id as its 16 bytes when
// it is a UUID (the engine's), the ready list and the groups linked through
// the entries themselves, the sender as an index into its queue's table of
// senders, and whatever most messages of the durable store lack (body,
// attributes, FIFO fields) out of line in an extra, nil when empty.

// entry is one message in its queue's index.
type entry struct {
	// prev and next link the ready list, while ready and not in its late
	// heap.
	prev, next *entry
	// gprev and gnext link the group, in send order.
	gprev, gnext *entry
	g            *group
	x            *extra
	// key is the id, parsed, unless strID (then x.id is the id).
	key                                      [16]byte
	sentAt, visibleAt, firstReceived, leased int64 // nanos(t)
	heapIdx                                  int32 // in hidden or ready.late, or -1
	receiveCount                             int32
	epoch                                    uint32
	// sender is the SenderID: "" if 0, qs.senders[sender-1] up to
	// maxSenders, x.sender if senderInExtra.
	sender   uint8
	isLeased bool
	ready    bool
	strID    bool
}

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

func (e *entry) extra() *extra {
	if e.x == nil {
		e.x = &extra{}
	}
	return e.x
}

// id returns the message id.
func (e *entry) id() string {
	if e.strID {
		return e.x.id
	}
	return ids.FormatUUID(e.key)
}

// newEntry makes the entry of m for queue qs, copying m's attributes; add
// puts it in the queue.
func (qs *queueState) newEntry(m *baton.Message) *entry {
	e := &entry{
		sentAt: nanos(m.SentAt), visibleAt: nanos(m.VisibleAt), firstReceived: nanos(m.FirstReceivedAt),
		leased: nanos(m.LeasedAt), heapIdx: -1, receiveCount: int32(min(m.ReceiveCount, math.MaxInt32)),
		epoch: m.Epoch, isLeased: m.Leased,
	}
	if k, ok := ids.ParseUUID(m.ID); ok {
		e.key = k
	} else {
		e.strID = true
		e.extra().id = m.ID
	}
	if m.Body != "" || m.BodyMD5 != "" || m.TraceHeader != "" || m.DedupID != "" || m.SequenceNumber != "" || m.DeadLetterSourceARN != "" || m.Attributes != nil {
		x := e.extra()
		x.body, x.bodyMD5, x.trace, x.dedupID, x.seq, x.deadLetterSource = m.Body, m.BodyMD5, m.TraceHeader, m.DedupID, m.SequenceNumber, m.DeadLetterSourceARN
		x.attrs = cloneAttributes(m.Attributes)
	}
	qs.setSender(e, m.SenderID)
	return e
}

// setSender records the entry's SenderID in qs's table of senders.
func (qs *queueState) setSender(e *entry, sender string) {
	if e.x != nil {
		e.x.sender = ""
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
	e.extra().sender = sender
}

func (qs *queueState) senderOf(e *entry) string {
	switch e.sender {
	case 0:
		return ""
	case senderInExtra:
		return e.x.sender
	}
	return qs.senders[e.sender-1]
}

// message returns e as a Message whose id is id (e's, which the caller
// has at hand). Its attributes are e's own: callers only read them.
func (qs *queueState) message(e *entry, id string) baton.Message {
	m := baton.Message{
		ID: id, GroupID: e.g.id, SenderID: qs.senderOf(e),
		SentAt: timeOf(e.sentAt), VisibleAt: timeOf(e.visibleAt), Leased: e.isLeased,
		ReceiveCount: int(e.receiveCount), FirstReceivedAt: timeOf(e.firstReceived), Epoch: e.epoch,
		LeasedAt: timeOf(e.leased),
	}
	if x := e.x; x != nil {
		m.Body, m.BodyMD5, m.Attributes, m.TraceHeader, m.DedupID = x.body, x.bodyMD5, x.attrs, x.trace, x.dedupID
		m.SequenceNumber, m.DeadLetterSourceARN = x.seq, x.deadLetterSource
	}
	return m
}

// group is the messages of one GroupID in send order.
type group struct {
	id         string
	head, tail *entry
	n          int
	// oprev and onext link the queue's ring of groups.
	oprev, onext *group
	// maxSent is the latest send time of a message added (once sent is
	// set), and lag how far before maxSent a message added since was
	// sent at most. Arrival order is then send order give or take lag,
	// which lets a browse stop early (browse.go). Neither shrinks when
	// messages leave.
	sent         bool
	maxSent, lag int64
}

func (g *group) pushBack(e *entry) {
	switch {
	case !g.sent || e.sentAt > g.maxSent:
		g.sent, g.maxSent = true, e.sentAt
	case g.maxSent-e.sentAt < 0: // overflow: as far as can be
		g.lag = math.MaxInt64
	default:
		g.lag = max(g.lag, g.maxSent-e.sentAt)
	}
	e.g, e.gprev, e.gnext = g, g.tail, nil
	if g.tail != nil {
		g.tail.gnext = e
	} else {
		g.head = e
	}
	g.tail = e
	g.n++
}

func (g *group) remove(e *entry) {
	if e.gprev != nil {
		e.gprev.gnext = e.gnext
	} else {
		g.head = e.gnext
	}
	if e.gnext != nil {
		e.gnext.gprev = e.gprev
	} else {
		g.tail = e.gprev
	}
	e.gprev, e.gnext = nil, nil
	g.n--
}

// readyList is the visible messages, taken in the order they were sent
// (SQS hands out a message whose lease lapsed before messages sent after
// it). Most become visible in that order, a send's at its send time: they
// wait in a list, each sent no earlier than the one before it, appended in
// constant time. A message that becomes visible after one sent later (a
// lapsed or released lease, a delay) waits in late, a heap by send time.
// The next message is whichever head, of the list or of late, was sent
// first, so a backlog costs nothing and a requeued message log(len(late)).
type readyList struct {
	head, tail *entry
	late       lateHeap
	n          int
}

// push makes e ready: last in the list if sent no earlier than its tail,
// otherwise in late.
func (l *readyList) push(e *entry) {
	e.ready = true
	l.n++
	if l.tail != nil && e.sentAt < l.tail.sentAt {
		heap.Push(&l.late, e)
		return
	}
	e.prev, e.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = e
	} else {
		l.head = e
	}
	l.tail = e
}

// first returns the ready message sent first, or nil if there is none.
func (l *readyList) first() *entry {
	if len(l.late) > 0 && (l.head == nil || l.late[0].sentAt < l.head.sentAt) {
		return l.late[0]
	}
	return l.head
}

func (l *readyList) remove(e *entry) {
	e.ready = false
	l.n--
	if e.heapIdx >= 0 { // in late: a ready entry is in no other heap
		heap.Remove(&l.late, int(e.heapIdx))
		return
	}
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// lateHeap orders ready messages by send time; an entry's heapIdx is its
// place, as in hiddenHeap (an entry is in at most one of them).
type lateHeap []*entry

func (h lateHeap) Len() int           { return len(h) }
func (h lateHeap) Less(i, j int) bool { return h[i].sentAt < h[j].sentAt }
func (h lateHeap) Swap(i, j int)      { swapEntries(h, i, j) }
func (h *lateHeap) Push(x any)        { pushEntry((*[]*entry)(h), x.(*entry)) }
func (h *lateHeap) Pop() any          { return popEntry((*[]*entry)(h)) }

// swapEntries, pushEntry and popEntry are the moves of both heaps of
// entries, hiddenHeap and lateHeap, which differ only in their order: each
// keeps the heapIdx of an entry its place in the one heap it is in, so that
// heap.Remove finds it without a search.
func swapEntries(h []*entry, i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = int32(i)
	h[j].heapIdx = int32(j)
}

func pushEntry(h *[]*entry, e *entry) {
	e.heapIdx = int32(len(*h))
	*h = append(*h, e)
}

func popEntry(h *[]*entry) *entry {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.heapIdx = -1
	return e
}
