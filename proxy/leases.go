package proxy

import (
	"container/list"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/ids"
)

// The proxy sees no lease of the upstream's, only the traffic: it follows
// each lease from the receive that handed out its receipt handle, with the
// deadline the visibility timeout in force gave it, through the changes
// and deletes made by that handle. A message's leases are numbered in the
// order the proxy saw its receives, so a later receive of the same message
// id is a redelivery. What the upstream decided is read from its answer
// (an error, a batch entry that failed); whether a lease was still current
// is the proxy's own reckoning by its deadlines, as the ledger's is.
//
// The upstream began a lease, or moved its deadline, somewhere between the
// moment the proxy sent the call and the moment it read the answer. The
// proxy dates both from the sending: its deadline is then never later than
// the upstream's, and a delete it reads the answer of before that deadline
// was in time there too. A late delete is never counted as in time (at
// worst, one within a round trip of the deadline is counted late).

// queueInfo is what the proxy knows of a queue.
type queueInfo struct {
	id   uint64
	url  string
	name string
	fifo bool
	// visibility is the queue's VisibilityTimeout attribute, fetched at
	// fetched; -1 until then. redrive is its RedrivePolicy.
	visibility int
	fetched    time.Time
	redrive    string
}

// visibilityTTL is how long a fetched VisibilityTimeout is used before it
// is fetched again: the queue's owner may change it elsewhere.
const visibilityTTL = time.Minute

// lease is one receipt handle's lease.
type lease struct {
	q        *queueInfo
	msg      *message
	handle   string
	epoch    uint32
	begin    time.Time
	deadline time.Time
	elem     *list.Element
	// deleteLost: a delete by its receipt, sent while it was current, was
	// answered with a server fault (5xx): whether it deleted the message is
	// not known.
	deleteLost bool
}

// message is a message the proxy has seen received.
type message struct {
	key     string
	id      string
	latest  *lease
	deleted bool // deleted through its current lease
	leases  int  // tracked leases of it
}

// leaseTable holds the tracked leases, oldest receive first, bounded.
type leaseTable struct {
	max      int
	byHandle map[string]*lease
	messages map[string]*message // by queue id and message id
	order    *list.List          // of *lease
	dropped  atomic.Uint64
}

func newLeaseTable(max int) *leaseTable {
	return &leaseTable{max: max, byHandle: make(map[string]*lease), messages: make(map[string]*message), order: list.New()}
}

// add tracks a lease, forgetting the oldest when the table is full and
// those begun more than the 12-hour ceiling ago, whose handles no longer
// act on anything.
func (t *leaseTable) add(l *lease, now time.Time) {
	for e := t.order.Front(); e != nil; e = t.order.Front() {
		old := e.Value.(*lease)
		if now.Sub(old.begin) <= ledger.MaxLeaseTime && t.order.Len() < t.max {
			break
		}
		if now.Sub(old.begin) <= ledger.MaxLeaseTime {
			t.dropped.Add(1)
		}
		t.remove(old)
	}
	if prev, ok := t.byHandle[l.handle]; ok {
		t.remove(prev)
	}
	l.elem = t.order.PushBack(l)
	t.byHandle[l.handle] = l
	l.msg.leases++
}

func (t *leaseTable) remove(l *lease) {
	t.order.Remove(l.elem)
	delete(t.byHandle, l.handle)
	if l.msg.leases--; l.msg.leases == 0 {
		delete(t.messages, l.msg.key)
	}
}

func (t *leaseTable) message(q *queueInfo, id string) *message {
	key := strconv.FormatUint(q.id, 10) + "/" + id
	m, ok := t.messages[key]
	if !ok {
		m = &message{key: key, id: id}
		t.messages[key] = m
	}
	return m
}

// queue returns the proxy's record of the queue at url, making one.
// p.mu is held.
func (p *Proxy) queue(url string) *queueInfo {
	if q, ok := p.queues[url]; ok {
		return q
	}
	name := url[strings.LastIndexByte(url, '/')+1:]
	q, ok := p.byName[name]
	if !ok {
		p.nextID++
		q = &queueInfo{id: p.nextID, url: url, name: name, fifo: strings.HasSuffix(name, ".fifo"), visibility: -1}
		p.byName[name] = q
	}
	p.queues[url] = q
	return q
}

// visibilityTimeout returns the queue's VisibilityTimeout, fetched from
// the upstream when not known or stale; -1 if it cannot be had.
func (p *Proxy) visibilityTimeout(ctx context.Context, q *queueInfo) int {
	now := p.clock.Now()
	p.mu.Lock()
	v, at, url := q.visibility, q.fetched, q.url
	p.mu.Unlock()
	if v >= 0 && now.Sub(at) < visibilityTTL {
		return v
	}
	body, _ := json.Marshal(map[string]any{"QueueUrl": url, "AttributeNames": []string{"VisibilityTimeout", "RedrivePolicy"}})
	h := http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amz-Target": {"AmazonSQS.GetQueueAttributes"}}
	status, _, answer, err := p.send(ctx, http.MethodPost, "/", "", h, body)
	var out struct{ Attributes map[string]string }
	if err != nil || status != http.StatusOK || json.Unmarshal(answer, &out) != nil {
		p.log.Warn("proxy: could not fetch the queue's VisibilityTimeout", "queue", url, "status", status, "err", err)
		return v
	}
	n, err := strconv.Atoi(out.Attributes["VisibilityTimeout"])
	if err != nil {
		return v
	}
	p.mu.Lock()
	q.visibility, q.fetched, q.redrive = n, now, out.Attributes["RedrivePolicy"]
	p.mu.Unlock()
	return n
}

// observe feeds the ledger what a forwarded call and its answer say of
// leases, and returns how many leases a receive's answer handed out.
func (p *Proxy) observe(r *http.Request, c *call, status int, header http.Header, body []byte) (leased int) {
	ok := status == http.StatusOK
	var a answer
	if ok {
		a = parseAnswer(header.Get("Content-Type"), body)
	}
	p.mu.Lock()
	q, known := p.queues[c.queueURL]
	if !known && ok {
		// Only a queue the upstream answered for is remembered: a client
		// naming made-up queues must not grow the proxy's memory.
		q, known = p.queue(c.queueURL), true
	}
	p.mu.Unlock()
	if !known {
		return 0
	}
	client := clientOf(r)
	switch c.action {
	case "ReceiveMessage":
		if !ok {
			return 0
		}
		return p.observeReceive(r, c, q, a.messages, client)
	case "DeleteMessage", "DeleteMessageBatch", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch":
		code := ""
		if !ok {
			code = errorCode(header, body)
		}
		// A server fault, or no answer (status 0, upstreamFailed): the
		// outcome is not known.
		p.settled(q, c, ok, status >= 500 || status == 0, a, code, client, r.Header.Get(baton.RenewalHeader) == baton.RenewalProgress)
	case "SendMessage", "SendMessageBatch":
		if !ok {
			return
		}
		n := 1
		if c.action == "SendMessageBatch" {
			n = len(a.successful)
		}
		p.ledger.Record(ledger.Event{Kind: ledger.KindSent, QueueID: q.id, At: p.clock.Now(), N: n})
	case "SetQueueAttributes":
		if v, err := strconv.Atoi(c.attributes["VisibilityTimeout"]); ok && err == nil {
			p.mu.Lock()
			q.visibility, q.fetched = v, p.clock.Now()
			p.mu.Unlock()
		}
	case "PurgeQueue":
		if ok {
			p.ledger.Record(ledger.Event{Kind: ledger.KindPurge, QueueID: q.id, At: p.clock.Now()})
		}
	case "DeleteQueue":
		if ok {
			p.ledger.Record(ledger.Event{Kind: ledger.KindForget, QueueID: q.id, At: p.clock.Now()})
		}
	}
	return 0
}

// observeReceive feeds the ledger a receive's answer of msgs for q, and
// returns how many leases it handed out.
func (p *Proxy) observeReceive(r *http.Request, c *call, q *queueInfo, msgs []received, client ledger.Client) int {
	vt := -1
	if len(msgs) > 0 && c.visibility != nil {
		vt = *c.visibility
	} else if len(msgs) > 0 {
		vt = p.visibilityTimeout(context.WithoutCancel(r.Context()), q)
	}
	// A client that left before the answer (a long poll cut by its
	// own HTTP timeout) was not there when it came, and holds none of
	// its leases (ledger.Event.ClientLeft).
	left, answer := r.Context().Err() != nil, ledger.AnswerOf(r.Context())
	if !left {
		p.seen(ledger.Event{Kind: ledger.KindSeen, QueueID: q.id, At: p.clock.Now(), Client: client}, answer)
	}
	if len(msgs) == 0 {
		return 0
	}
	if vt < 0 {
		vt = 30 // SQS's default, when the attribute could not be read
	}
	return p.received(q, msgs, vt, c.visibility == nil, left, client, c.sent, answer)
}

// seen tells the ledger that a receive's client was there when the
// upstream's answer came (holders.go in engine/ledger), dated then, not
// from the call's sending, which may be before the lapse it answers. With
// an answer still to be written to the client (ledger.WithAnswer), only
// once it went out (Ledger.AnswerWent): a client whose answer is lost (its
// host gone, the connection cut) is no sign it is there.
func (p *Proxy) seen(ev ledger.Event, answer *ledger.Answer) {
	if answer != nil {
		answer.See(ev)
		return
	}
	p.ledger.Record(ev)
}

// received begins a lease for each message a receive sent at sent handed
// out, dated from sent, for vt seconds: the queue's VisibilityTimeout when
// queueTimeout, else what the receive asked for; left says the answer
// reached no client, else the leases are noted in handed, should it be
// lost as it is written. It returns how many leases it began or replayed.
func (p *Proxy) received(q *queueInfo, msgs []received, vt int, queueTimeout, left bool, client ledger.Client, sent time.Time,
	handed *ledger.Answer) (leased int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	sent = earliest(sent, now)
	var batch uint64 // the messages of one receive, when several (ledger.Event.Batch)
	if len(msgs) > 1 {
		batch = ids.NewUint64()
	}
	for _, m := range msgs {
		if l, seen := p.leases.byHandle[m.handle]; seen {
			// A FIFO queue answers a retried receive (the same
			// ReceiveRequestAttemptId) with the same receipts: the same
			// leases, not new ones, which go on to a new end, no renewal
			// by their holder (ledger.Event.Replay; see the
			// ReceiveRequestAttemptId parameter of
			// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html).
			if l.msg.latest == l && !l.msg.deleted && now.Before(l.deadline) {
				end := sent.Add(time.Duration(vt) * time.Second)
				if ceiling := l.begin.Add(ledger.MaxLeaseTime); end.After(ceiling) {
					end = ceiling
				}
				l.deadline = end
				ev := ledger.Event{
					Kind: ledger.KindChange, QueueID: q.id, MessageID: m.id, Epoch: l.epoch, At: now, Deadline: end,
					LeasedAt: l.begin, Result: baton.LeaseCurrent, StoreEpoch: l.epoch, Replay: true, ClientLeft: left, Answering: handed != nil && !left, Client: client,
				}
				p.ledger.Record(ev)
				handed.Hand(ev)
				leased++
			}
			continue
		}
		tm := p.leases.message(q, m.id)
		epoch := uint32(1)
		at := sent
		if prev := tm.latest; prev != nil {
			epoch = prev.epoch + 1
			if !tm.deleted && prev.deadline.After(at) {
				// The upstream handed the message out again, so the
				// previous lease had lapsed there first; this receive was
				// sent before its end here (a long poll waiting for it).
				// The new lease is dated from the old one's end, which the
				// ledger then sees lapse, not end early.
				at = earliest(prev.deadline, now)
			}
		}
		l := &lease{q: q, msg: tm, handle: m.handle, epoch: epoch, begin: at, deadline: at.Add(time.Duration(vt) * time.Second)}
		tm.latest, tm.deleted = l, false
		p.leases.add(l, now)
		ev := ledger.Event{
			Kind: ledger.KindReceive, QueueID: q.id, MessageID: m.id, Epoch: epoch, At: at,
			Deadline: l.deadline, ReceiveCount: int(epoch), Client: client, Batch: batch, N: len(msgs),
			QueueTimeout: queueTimeout, ClientLeft: left, Answering: handed != nil && !left,
		}
		p.ledger.Record(ev)
		handed.Hand(ev)
		leased++
	}
	return leased
}

// receiptErrors are the error codes that say a receipt no longer acts on
// its message: the upstream refused the handle, not the request.
var receiptErrors = map[string]bool{
	"ReceiptHandleIsInvalid": true, "InvalidParameterValue": true, "AWS.SimpleQueueService.MessageNotInflight": true,
	"MessageNotInflight": true, "InvalidParameterValueException": true, "ReceiptHandleIsInvalidException": true,
}

// settled applies the deletes and visibility changes of a call. ok says
// the call succeeded (a batch's entries each by the answer), fault that it
// was answered with a server fault (its outcome not known), code is the
// error code of a call that failed; progress, that the client renews on its
// handler's progress (baton.RenewalHeader).
func (p *Proxy) settled(q *queueInfo, c *call, ok, fault bool, a answer, code string, client ledger.Client, progress bool) {
	batch := strings.HasSuffix(c.action, "Batch")
	del := strings.HasPrefix(c.action, "Delete")
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	for _, e := range c.entries {
		l, known := p.leases.byHandle[e.handle]
		if !known {
			continue // a lease the proxy did not see begin
		}
		done := ok && (!batch || a.successful[e.id])
		current := l.msg.latest == l && !l.msg.deleted && now.Before(l.deadline)
		if !done && current && !del && p.pastCeiling(q, c, e, l, client, now) {
			continue
		}
		if !done {
			if del && current && fault {
				l.deleteLost = true
			}
			if current && fault {
				p.unanswered(q, c, e, l, del, client, now)
			}
			// Refused: only a receipt the proxy already judged lapsed
			// tells something (a late completion); a refusal of a current
			// one has another cause the proxy cannot see, and so has a
			// whole request refused for anything but its receipt
			// (throttling, a signature).
			if current || (!ok && !receiptErrors[code]) {
				continue
			}
		}
		ev := ledger.Event{
			QueueID: q.id, MessageID: l.msg.id, Epoch: l.epoch, At: now,
			LeasedAt: l.begin, StoreEpoch: l.msg.latest.epoch, Client: client,
		}
		if del {
			p.ledger.Record(deleted(q, l, ev, current, done))
		} else if e.visibility != nil {
			// Dated from the call's sending, as a receive's lease is.
			end := earliest(c.sent, now).Add(time.Duration(*e.visibility) * time.Second)
			ev.Deadline, ev.Progress = end, progress
			p.ledger.Record(changed(q, l, ev, current, done, now))
		}
	}
}

// pastCeiling records a renewal by the receipt of l, current, that asks for
// an end past the 12-hour ceiling, which the upstream refuses (as SQS does),
// and says whether it was one.
func (p *Proxy) pastCeiling(q *queueInfo, c *call, e entry, l *lease, client ledger.Client, now time.Time) bool {
	if e.visibility == nil {
		return false
	}
	asked := earliest(c.sent, now).Add(time.Duration(*e.visibility) * time.Second)
	if asked.Sub(l.begin) <= ledger.MaxLeaseTime {
		return false
	}
	p.ledger.Record(ledger.Event{
		Kind: ledger.KindRefused, QueueID: q.id, MessageID: l.msg.id, Epoch: l.epoch, At: now,
		Deadline: asked, LeasedAt: l.begin, Client: client,
	})
	return true
}

// deleted completes ev, the event of a delete by the receipt of l (current:
// its lease was live; done: the upstream deleted), and marks the message
// deleted where it is.
func deleted(q *queueInfo, l *lease, ev ledger.Event, current, done bool) ledger.Event {
	ev.Kind, ev.FIFO = ledger.KindDelete, q.fifo
	switch {
	case current:
		ev.Result, ev.Removed = baton.LeaseCurrent, true
		l.msg.deleted = true
	case l.msg.deleted:
		ev.Result, ev.StoreEpoch = baton.LeaseGone, 0
	case done && l.deleteLost && l.msg.latest == l:
		// A retry of a delete sent in time whose answer was
		// lost: that attempt may have deleted the message, or
		// this one after the lease's end; the proxy cannot see
		// which. Read as the server reads the retry that finds
		// its message deleted: the lease's completion, at the
		// first attempt, which unanswered told the ledger of.
		ev.Result, ev.StoreEpoch = baton.LeaseGone, 0
		l.msg.deleted = true
	default:
		// On a standard queue a lapsed receipt still deletes
		// the message; on a FIFO queue it is refused.
		ev.Result, ev.Removed = baton.LeaseLapsed, done && !q.fifo
		if ev.Removed {
			l.msg.deleted = true
		}
	}
	return ev
}

// changed completes ev, the event of a visibility change by the receipt of l
// to ev.Deadline (current: its lease was live; done: the upstream took it),
// and moves the lease it moved.
func changed(q *queueInfo, l *lease, ev ledger.Event, current, done bool, now time.Time) ledger.Event {
	ev.Kind = ledger.KindChange
	cur := l.msg.latest
	switch {
	case current:
		ev.Result, ev.Shortened = baton.LeaseCurrent, ledger.Shortens(ev.Deadline, l.deadline)
		l.deadline = ev.Deadline
	case l.msg.deleted:
		ev.Result, ev.StoreEpoch = baton.LeaseGone, 0
	case done && !q.fifo && cur != l && now.Before(cur.deadline):
		// An older receipt moves the lease of the message's current
		// receive on a standard queue.
		ev.Result = baton.LeaseSuperseded
		cur.deadline = ev.Deadline
	default:
		ev.Result = baton.LeaseLapsed
	}
	return ev
}

// unanswered tells the ledger of a delete or visibility change by the
// receipt of l, sent within its lease, that the upstream answered with a
// server fault (its outcome not known): the SDK retries it, perhaps after
// the lease's end, and the ledger reads that retry against this attempt's
// time (ledger.Event.Unanswered).
func (p *Proxy) unanswered(q *queueInfo, c *call, e entry, l *lease, del bool, client ledger.Client, now time.Time) {
	ev := ledger.Event{Kind: ledger.KindSeen, QueueID: q.id, MessageID: l.msg.id, Epoch: l.epoch, At: earliest(c.sent, now),
		LeasedAt: l.begin, Client: client, Unanswered: true}
	if !del {
		if e.visibility == nil {
			return
		}
		ev.Deadline = ev.At.Add(time.Duration(*e.visibility) * time.Second)
	}
	p.ledger.Record(ev)
}

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
