package bench

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/baton-sqs/baton/internal/ids"
)

// payload returns n printable bytes, the same for every call with the same n:
// message bodies whose content no layer can shortcut (no run of one byte).
func payload(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = alphabet[x&63]
	}
	return string(b)
}

// Request bodies, spelled as the JSON 1.0 protocol's members (docs/sqs-behaviour.md
// §1.2). Only the members a scenario sets are present.
type (
	sendBody struct {
		QueueUrl    string
		MessageBody string
	}
	batchEntry struct {
		Id          string
		MessageBody string
	}
	sendBatchBody struct {
		QueueUrl string
		Entries  []batchEntry
	}
	receiveBody struct {
		QueueUrl            string
		MaxNumberOfMessages int
		WaitTimeSeconds     int
		VisibilityTimeout   *int `json:",omitempty"`
	}
	deleteBody struct {
		QueueUrl      string
		ReceiptHandle string
	}
)

// Response members the scenarios read.
type (
	batchResponse struct {
		Successful []struct{ Id string }
		Failed     []struct{ Id, Code string }
	}
	receivedMessage struct {
		MessageId     string
		ReceiptHandle string
	}
	receiveResponse struct {
		Messages []receivedMessage
	}
	receiveBodyResponse struct {
		Messages []struct {
			MessageId     string
			ReceiptHandle string
			Body          string
		}
	}
)

// newSendBatch builds a SendMessageBatch of ten entries with ids 0 to 9.
func (r *run) newSendBatch(queueURL, body string) *Request {
	b := sendBatchBody{QueueUrl: queueURL, Entries: make([]batchEntry, 10)}
	for i := range b.Entries {
		b.Entries[i] = batchEntry{Id: strconv.Itoa(i), MessageBody: body}
	}
	return r.client.NewRequest("SendMessageBatch", mustJSON(b))
}

// decode reads a response of action into out; an unreadable one counts as
// an error and decode reports false.
func (w *worker) decode(action string, body []byte, out any) bool {
	if err := json.Unmarshal(body, out); err != nil {
		w.fail(action + ": unreadable response")
		return false
	}
	return true
}

// receive does a ReceiveMessage request and reads its answer into out. It
// reports stopped when the run is over; ok is false when the call failed or
// its answer was unreadable, either already counted as an error.
func (w *worker) receive(ctx context.Context, req *Request, out any) (s sent, ok, stopped bool) {
	s, err := w.do(ctx, req)
	if err == errStopped {
		return s, false, true
	}
	if err != nil {
		return s, false, false
	}
	return s, w.decode("ReceiveMessage", s.body, out), false
}

// batchResult reads the response to a batch of entries, counts its failed
// entries, and those it names in neither list, as errors and returns how
// many succeeded.
func (w *worker) batchResult(action string, body []byte, entries int) int {
	var out batchResponse
	if !w.decode(action, body, &out) {
		return 0
	}
	for _, f := range out.Failed {
		w.fail(f.Code)
	}
	for range entries - len(out.Successful) - len(out.Failed) {
		w.fail(action + ": entry missing from the response")
	}
	return len(out.Successful)
}

// appendDeleteBatch appends a DeleteMessageBatch body for handles (at most
// ten) to dst; queueURL is the queue's URL as a JSON string.
func appendDeleteBatch(dst, queueURL []byte, handles []string) []byte {
	dst = append(dst, `{"QueueUrl":`...)
	dst = append(dst, queueURL...)
	dst = append(dst, `,"Entries":[`...)
	for i, h := range handles {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"Id":"`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `","ReceiptHandle":`...)
		dst = appendJSONString(dst, h)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// appendJSONString appends s as a JSON string; s is valid UTF-8 (it came
// out of a JSON decoder).
func appendJSONString(dst []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// sendLoop is the send scenario: one message per request.
func (r *run) sendLoop(ctx context.Context, w *worker) {
	req := r.client.NewRequest("SendMessage", mustJSON(sendBody{QueueUrl: r.queues[0].url, MessageBody: payload(r.cfg.BodySize)}))
	for {
		s, err := w.do(ctx, req)
		if err == errStopped {
			return
		}
		if err == nil {
			w.delivered(1, s.end)
		}
	}
}

// sendBatchLoop is the send-batch scenario: ten messages per request.
func (r *run) sendBatchLoop(ctx context.Context, w *worker) {
	req := r.newSendBatch(r.queues[0].url, payload(r.cfg.BodySize))
	for {
		s, err := w.do(ctx, req)
		if err == errStopped {
			return
		}
		if err == nil {
			w.delivered(w.batchResult("SendMessageBatch", s.body, 10), s.end)
		}
	}
}

// lifecycleWait is lifecycle's long-poll wait. The run's end cancels a
// receive still waiting.
const lifecycleWait = 20

// lifecycleLoop is the lifecycle scenario: send ten, receive up to ten with
// a long poll, delete what came; a message counts once deleted.
func (r *run) lifecycleLoop(ctx context.Context, w *worker) {
	q := r.queues[0]
	send := r.newSendBatch(q.url, payload(r.cfg.BodySize))
	recv := r.client.NewRequest("ReceiveMessage", mustJSON(receiveBody{QueueUrl: q.url, MaxNumberOfMessages: 10, WaitTimeSeconds: lifecycleWait}))
	qurl := mustJSON(q.url)
	for {
		s, err := w.do(ctx, send)
		if err == errStopped {
			return
		}
		if err == nil {
			w.batchResult("SendMessageBatch", s.body, 10)
		}
		s, err = w.do(ctx, recv)
		if err == errStopped {
			return
		}
		if err != nil {
			continue
		}
		if _, stopped := r.deleteReceived(ctx, w, qurl, s.body); stopped {
			return
		}
	}
}

// deleteReceived deletes, in one DeleteMessageBatch, the messages of the
// ReceiveMessage response body, counting those deleted as delivered. It
// returns how many the response held, and whether the run is over.
func (r *run) deleteReceived(ctx context.Context, w *worker, qurl, body []byte) (received int, stopped bool) {
	var got receiveResponse
	if !w.decode("ReceiveMessage", body, &got) || len(got.Messages) == 0 {
		return 0, false
	}
	w.handles = w.handles[:0]
	for _, m := range got.Messages {
		w.handles = append(w.handles, m.ReceiptHandle)
	}
	w.scratch = appendDeleteBatch(w.scratch[:0], qurl, w.handles)
	s, err := w.do(ctx, r.client.NewRequest("DeleteMessageBatch", w.scratch))
	if err == errStopped {
		return len(got.Messages), true
	}
	if err == nil {
		w.delivered(w.batchResult("DeleteMessageBatch", s.body, len(w.handles)), s.end)
	}
	return len(got.Messages), false
}

// receiveDeleteWait is receive-delete's long poll, in seconds: long
// enough to ride out a moment with every message leased to other workers.
const receiveDeleteWait = 1

// receiveDeleteEmpties is how many receives in a row must come back empty
// before a receive-delete worker takes the queue to have run out.
const receiveDeleteEmpties = 2

// receiveDeleteLoop is the receive-delete scenario: receive up to ten with
// a short long poll, delete what came; a message counts once deleted. A
// worker stops once the queue has run out.
func (r *run) receiveDeleteLoop(ctx context.Context, w *worker) {
	q := r.queues[0]
	recv := r.client.NewRequest("ReceiveMessage", mustJSON(receiveBody{QueueUrl: q.url, MaxNumberOfMessages: 10, WaitTimeSeconds: receiveDeleteWait}))
	qurl := mustJSON(q.url)
	for empties := 0; empties < receiveDeleteEmpties; {
		s, err := w.do(ctx, recv)
		if err == errStopped {
			return
		}
		if err != nil {
			continue
		}
		n, stopped := r.deleteReceived(ctx, w, qurl, s.body)
		if stopped {
			return
		}
		if n > 0 {
			empties = 0
		} else {
			empties++
		}
	}
	r.ranOut.Store(true)
}

// longPollGap is how long the longpoll-latency sender waits after a
// receiver has asked again before it sends: the receive must be waiting at
// the server, and the load stays low (well under 100 messages a second).
const longPollGap = 10 * time.Millisecond

// longPollTimeout is how long the sender waits for a message to arrive
// before it counts it lost and sends the next.
const longPollTimeout = 5 * time.Second

// longPoll pairs each longpoll-latency send with its receive. A probe's
// message body starts with "lp-<run>-<seq>-", where run is random to the
// run: a probe an earlier run left in a reused queue is not this run's.
type longPoll struct {
	// prefix is "lp-<run>-".
	prefix string
	mu     sync.Mutex
	probes map[uint64]*probe
	// hist is from the send's response, e2e from the send's request, to
	// the receiver's response.
	hist, e2e Histogram
	early     uint64
	// delivered carries the seq of each probe both sides have seen.
	delivered chan uint64
	// polling is signalled by a receiver about to ask again.
	polling chan struct{}
}

type probe struct {
	sendStart, sent, received time.Time
}

func newLongPoll() *longPoll {
	return &longPoll{
		prefix: "lp-" + strconv.FormatUint(ids.NewUint64(), 36) + "-",
		probes: map[uint64]*probe{}, delivered: make(chan uint64, 64), polling: make(chan struct{}, 1024),
	}
}

// sentAt records probe seq's send: its request and response times.
func (lp *longPoll) sentAt(r *run, seq uint64, start, end time.Time) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	p := lp.probe(seq)
	p.sendStart, p.sent = start, end
	lp.complete(r, seq, p)
}

// receivedAt records the response that delivered probe seq.
func (lp *longPoll) receivedAt(r *run, seq uint64, t time.Time) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	p := lp.probe(seq)
	if !p.received.IsZero() {
		return // delivered twice: only the first counts
	}
	p.received = t
	lp.complete(r, seq, p)
}

func (lp *longPoll) probe(seq uint64) *probe {
	p := lp.probes[seq]
	if p == nil {
		p = &probe{}
		lp.probes[seq] = p
	}
	return p
}

func (lp *longPoll) complete(r *run, seq uint64, p *probe) {
	if p.sent.IsZero() || p.received.IsZero() {
		return
	}
	d := p.received.Sub(p.sent)
	if d < 0 {
		lp.early++
		d = 0
	}
	if r.inWindow(p.received) {
		lp.hist.Record(d)
		lp.e2e.Record(p.received.Sub(p.sendStart))
	}
	delete(lp.probes, seq)
	select {
	case lp.delivered <- seq:
	default:
	}
}

// longPollSender sends one probe at a time, each once the previous one was
// delivered and its receiver is waiting again.
func (r *run) longPollSender(ctx context.Context, w *worker) {
	lp, q := r.lp, r.queues[0]
	pad := payload(r.cfg.BodySize)
	// Every receiver asks once before the first probe.
	for range r.cfg.Concurrency {
		select {
		case <-lp.polling:
		case <-ctx.Done():
			return
		}
	}
	for seq := uint64(1); ; seq++ {
		sleep(ctx, longPollGap)
		body := lp.prefix + strconv.FormatUint(seq, 10) + "-"
		if len(body) < len(pad) {
			body += pad[len(body):]
		}
		s, err := w.do(ctx, r.client.NewRequest("SendMessage", mustJSON(sendBody{QueueUrl: q.url, MessageBody: body})))
		if err == errStopped {
			return
		}
		if err != nil {
			continue
		}
		lp.sentAt(r, seq, s.start, s.end)
		if !lp.await(ctx, seq) {
			if ctx.Err() != nil {
				return
			}
			w.fail("longpoll: message not delivered within " + longPollTimeout.String())
			continue
		}
		// The receiver that got it asks again before the next probe.
		select {
		case <-lp.polling:
		case <-ctx.Done():
			return
		case <-time.After(longPollTimeout):
		}
	}
}

// await waits until probe seq is delivered.
func (lp *longPoll) await(ctx context.Context, seq uint64) bool {
	t := time.NewTimer(longPollTimeout)
	defer t.Stop()
	for {
		select {
		case got := <-lp.delivered:
			if got == seq {
				return true
			}
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// longPollReceiver waits for probes with long polls and deletes each.
func (r *run) longPollReceiver(ctx context.Context, w *worker) {
	lp, q := r.lp, r.queues[0]
	recv := r.client.NewRequest("ReceiveMessage", mustJSON(receiveBody{QueueUrl: q.url, MaxNumberOfMessages: 1, WaitTimeSeconds: 20}))
	for {
		select {
		case lp.polling <- struct{}{}:
		default:
		}
		var got receiveBodyResponse
		s, ok, stopped := w.receive(ctx, recv, &got)
		if stopped {
			return
		}
		if !ok {
			continue
		}
		for _, m := range got.Messages {
			if seq, ok := lp.probeSeq(m.Body); ok {
				lp.receivedAt(r, seq, s.end)
				w.delivered(1, s.end)
			}
			del := r.client.NewRequest("DeleteMessage", mustJSON(deleteBody{QueueUrl: q.url, ReceiptHandle: m.ReceiptHandle}))
			if _, err := w.do(ctx, del); err == errStopped {
				return
			}
		}
	}
}

// probeSeq reads the sequence number of one of this run's longpoll-latency
// message bodies.
func (lp *longPoll) probeSeq(body string) (uint64, bool) {
	rest, ok := strings.CutPrefix(body, lp.prefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	return n, err == nil
}

// leaseExpiryLoop is the lease-expiry scenario on the worker's own queue:
// send ten, lease them with the short visibility timeout, leave them, wait
// for each to come back and note how late after its deadline it came, then
// delete them.
func (r *run) leaseExpiryLoop(ctx context.Context, w *worker) {
	q := r.queues[w.id]
	vt := r.cfg.VisibilityTimeout
	send := r.newSendBatch(q.url, payload(r.cfg.BodySize))
	lease := r.client.NewRequest("ReceiveMessage", mustJSON(receiveBody{
		QueueUrl: q.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: &vt,
	}))
	hold := 60
	again := r.client.NewRequest("ReceiveMessage", mustJSON(receiveBody{
		QueueUrl: q.url, MaxNumberOfMessages: 10, WaitTimeSeconds: min(vt+5, 20), VisibilityTimeout: &hold,
	}))
	vis := time.Duration(vt) * time.Second
	for {
		s, err := w.do(ctx, send)
		if err == errStopped {
			return
		}
		if err != nil {
			continue
		}
		n := w.batchResult("SendMessageBatch", s.body, 10)
		deadlines, stopped := r.leaseAll(ctx, w, lease, n, vis)
		if stopped {
			return
		}
		handles, stopped := r.awaitReturn(ctx, w, again, deadlines, vis)
		if stopped || r.deleteAll(ctx, w, q.url, handles) {
			return
		}
	}
}

// leaseAll leases the n messages just sent, trying ten receives at most,
// and returns each one's deadline: the start of the receive that leased it
// last plus the timeout.
func (r *run) leaseAll(ctx context.Context, w *worker, lease *Request, n int, vis time.Duration) (deadlines map[string]time.Time, stopped bool) {
	deadlines = map[string]time.Time{}
	for tries := 0; len(deadlines) < n && tries < 10; tries++ {
		var got receiveResponse
		s, ok, stopped := w.receive(ctx, lease, &got)
		if stopped {
			return nil, true
		}
		if !ok {
			continue
		}
		// A message seen before was leased again (its first lease expired
		// while the others were being leased): its deadline is now this
		// lease's.
		for _, m := range got.Messages {
			deadlines[m.MessageId] = s.start.Add(vis)
		}
	}
	return deadlines, false
}

// awaitReturn receives until each leased message is handed out again (or
// the timeout + 10 s has passed), records how late each came, counts one
// failure for each that did not, and returns the receipt handles of all it
// received.
func (r *run) awaitReturn(ctx context.Context, w *worker, again *Request, deadlines map[string]time.Time, vis time.Duration) (handles []string, stopped bool) {
	giveUp := time.Now().Add(vis + 10*time.Second)
	for len(deadlines) > 0 && time.Now().Before(giveUp) {
		var got receiveResponse
		s, ok, stopped := w.receive(ctx, again, &got)
		if stopped {
			return nil, true
		}
		if !ok {
			continue
		}
		for _, m := range got.Messages {
			handles = append(handles, m.ReceiptHandle)
			d, ok := deadlines[m.MessageId]
			if !ok {
				continue // not one of this round's: just delete it
			}
			delete(deadlines, m.MessageId)
			if s.end.Before(d) {
				w.run.note("a message was handed out again before its lease's earliest deadline")
			}
			if r.inWindow(s.end) {
				w.lateness.Record(s.end.Sub(d))
			}
			w.delivered(1, s.end)
		}
	}
	for range deadlines { // one error a message
		w.fail("lease-expiry: message not handed out again within the timeout + 10s")
	}
	return handles, false
}

// deleteAll deletes the handles ten at a time; it says whether the run
// stopped meanwhile.
func (r *run) deleteAll(ctx context.Context, w *worker, queueURL string, handles []string) (stopped bool) {
	qurl := mustJSON(queueURL)
	for len(handles) > 0 {
		k := min(len(handles), 10)
		w.scratch = appendDeleteBatch(w.scratch[:0], qurl, handles[:k])
		handles = handles[k:]
		s, err := w.do(ctx, r.client.NewRequest("DeleteMessageBatch", w.scratch))
		if err == errStopped {
			return true
		}
		if err == nil {
			w.batchResult("DeleteMessageBatch", s.body, k)
		}
	}
	return false
}
