package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-sqs/baton/internal/ids"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
)

// inFlightLimit is the most in-flight messages of a queue. Beyond it a
// short poll of a standard queue fails with OverLimit; a long poll, and any
// receive from a FIFO queue, returns nothing.
const inFlightLimit = 120000

// maxDeadLetterRounds bounds how often one receive looks again after every
// message it found went to the dead-letter queue.
const maxDeadLetterRounds = 10

// maxTraceHeader bounds the X-Amzn-Trace-Id header a send keeps with each
// of its messages. An X-Ray header is some hundred bytes; a longer one is
// no trace header, and a batch would keep ten copies of it.
const maxTraceHeader = 8192

// SendParams describe one message to send.
type SendParams struct {
	// ID is the batch entry id (batches only).
	ID           string
	Body         string
	DelaySeconds *int
	Attributes   map[string]baton.MessageAttribute
	// SystemAttributes may hold only AWSTraceHeader, of type String.
	SystemAttributes map[string]baton.MessageAttribute
	GroupID          string
	DedupID          string
	// EmptyGroupID and EmptyDedupID say the request carried MessageGroupId
	// or MessageDeduplicationId with an empty value, which SQS refuses as
	// invalid where it would take the parameter's absence.
	EmptyGroupID, EmptyDedupID bool
	// TraceHeader is the request's X-Amzn-Trace-Id HTTP header, the
	// message's AWSTraceHeader unless SystemAttributes gives one.
	TraceHeader string
}

// SendResult is what a send reports for one message.
type SendResult struct {
	ID                    string
	MessageID             string
	MD5OfBody             string
	MD5OfAttributes       string
	MD5OfSystemAttributes string
	SequenceNumber        string
}

// BatchError is a failed batch entry.
type BatchError struct {
	ID  string
	Err *baton.Error
}

// SendMessage validates and stores one message.
func (e *Engine) SendMessage(ctx context.Context, ref QueueRef, p SendParams) (*SendResult, error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, err
	}
	return e.sendOne(ctx, q, ref, p)
}

// sendOne validates and stores one message in q, as read for ref.
func (e *Engine) sendOne(ctx context.Context, q *baton.Queue, ref QueueRef, p SendParams) (*SendResult, error) {
	if q.IsFIFO() && p.GroupID == "" && !p.EmptyGroupID {
		return nil, baton.MissingParameter("MessageGroupId")
	}
	if err := checkDedupSource(q, p); err != nil {
		return nil, err
	}
	now := e.clock.Now()
	m, err := e.prepare(q, ref, p, now, false)
	if err != nil {
		return nil, err
	}
	res, err := e.storeMessages(ctx, q, []prepared{m}, now)
	if err != nil {
		return nil, err
	}
	return &res[0], nil
}

// SendMessageBatch sends up to ten messages. Whole-request rules fail the
// request; an entry that breaks a message rule fails alone. FIFO entries
// are enqueued in request order.
func (e *Engine) SendMessageBatch(ctx context.Context, ref QueueRef, entries []SendParams) ([]SendResult, []BatchError, error) {
	ids := make([]string, len(entries))
	total := 0
	for i, en := range entries {
		ids[i] = en.ID
		total += len(en.Body)
		for n, a := range en.Attributes {
			total += a.Size(n)
		}
	}
	if err := checkBatchIDs("SendMessageBatchRequestEntry", ids); err != nil {
		return nil, nil, err
	}
	if total > baton.MaxMessageSize {
		return nil, nil, baton.Errorf(baton.ErrBatchRequestTooLong,
			"Batch requests cannot be longer than %d bytes. You have sent %d bytes.", baton.MaxMessageSize, total)
	}
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	for _, en := range entries {
		if q.IsFIFO() && en.GroupID == "" && !en.EmptyGroupID {
			return nil, nil, baton.Errorf(baton.ErrInvalidParameterValue, "The request must contain the parameter MessageGroupId.")
		}
		if err := checkDedupSource(q, en); err != nil {
			return nil, nil, err
		}
	}
	now := e.clock.Now()
	var (
		failed []BatchError
		msgs   []prepared
	)
	for _, en := range entries {
		m, err := e.prepare(q, ref, en, now, true)
		if err != nil {
			failed = append(failed, BatchError{ID: en.ID, Err: baton.AsError(err)})
			continue
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		return nil, failed, nil
	}
	ok, err := e.storeMessages(ctx, q, msgs, now)
	if err != nil {
		return nil, nil, err
	}
	return ok, failed, nil
}

// prepared is a validated message ready to store.
type prepared struct {
	msg      *baton.Message
	dedupKey string
	result   SendResult
}

// storeMessages stores prepared messages in one store call and fills in what the
// store decides: sequence numbers, and the original id of a duplicate.
func (e *Engine) storeMessages(ctx context.Context, q *baton.Queue, msgs []prepared, now time.Time) ([]SendResult, error) {
	params := baton.MessageSendParams{QueueID: q.ID, Messages: make([]*baton.Message, len(msgs))}
	if q.IsFIFO() {
		params.DedupKeys = make([]string, len(msgs))
		params.DedupCutoff = now.Add(-DedupWindow)
	}
	for i, m := range msgs {
		params.Messages[i] = m.msg
		if q.IsFIFO() {
			params.DedupKeys[i] = m.dedupKey
		}
	}
	sent, err := e.store.MessageSend(ctx, params)
	if err != nil {
		return nil, storeErr(err, "send messages")
	}
	out := make([]SendResult, len(msgs))
	stored := 0
	for i, m := range msgs {
		out[i] = m.result
		out[i].MessageID = sent[i].MessageID
		out[i].SequenceNumber = sent[i].SequenceNumber
		if !sent[i].Duplicate {
			stored++
		}
	}
	if stored > 0 {
		e.record(ledger.Event{Kind: ledger.KindSent, QueueID: q.ID, At: now, N: stored})
	}
	e.notify(q.ID)
	return out, nil
}

// DedupWindow is how long a FIFO queue remembers a deduplication id (and
// an SNS FIFO topic, the same).
const DedupWindow = 5 * time.Minute

// ContentDedupID is the deduplication id content-based deduplication gives
// a message: the lower-case hex SHA-256 of its body (of an SNS message, its
// Message), and nothing of its attributes.
func ContentDedupID(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// checkDedupSource: a FIFO message needs a deduplication id, given or
// derived from its body.
func checkDedupSource(q *baton.Queue, p SendParams) error {
	if q.IsFIFO() && p.DedupID == "" && !p.EmptyDedupID && !q.Attributes.ContentBasedDeduplication {
		return baton.Errorf(baton.ErrInvalidParameterValue,
			"The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
	}
	return nil
}

// notForQueueType is SQS's reason, word for word, for a send parameter the
// queue's type does not take: DelaySeconds on a FIFO queue, recorded by
// LocalStack against AWS, and MessageDeduplicationId on a standard queue,
// seen in a live AWS answer (docs/sqs-behaviour.md §6).
const notForQueueType = "The request include parameter that is not valid for this queue type."

// prepare validates one message against the queue and builds it. The
// error is the first check that fails, in this order: content, system
// attributes, delay, group id, deduplication id.
func (e *Engine) prepare(q *baton.Queue, ref QueueRef, p SendParams, now time.Time, batch bool) (prepared, error) {
	if err := checkContent(q, p, batch); err != nil {
		return prepared{}, err
	}
	trace, err := traceHeaderOf(p)
	if err != nil {
		return prepared{}, err
	}
	delay, err := sendDelay(q, p)
	if err != nil {
		return prepared{}, err
	}
	if (p.GroupID != "" || p.EmptyGroupID) && !validGroupID(p.GroupID) {
		return prepared{}, baton.InvalidParameter("MessageGroupId", p.GroupID,
			"MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
	}
	dedupID, key, err := dedupOf(q, p)
	if err != nil {
		return prepared{}, err
	}
	bodyMD5 := MD5OfBody(p.Body)
	m := &baton.Message{
		ID:          ids.NewUUID(),
		Body:        p.Body,
		BodyMD5:     bodyMD5,
		Attributes:  p.Attributes,
		TraceHeader: trace,
		GroupID:     p.GroupID,
		DedupID:     dedupID,
		SenderID:    ref.Account,
		SentAt:      now,
		VisibleAt:   now.Add(time.Duration(delay) * time.Second),
	}
	return prepared{msg: m, dedupKey: key, result: SendResult{
		ID:                    p.ID,
		MD5OfBody:             bodyMD5,
		MD5OfAttributes:       MD5OfAttributes(p.Attributes),
		MD5OfSystemAttributes: MD5OfAttributes(p.SystemAttributes),
	}}, nil
}

// checkContent: a message's body is there and of the characters SQS
// takes, its attributes are valid, and body and attributes together fit
// the queue's MaximumMessageSize (for a batch entry, batch set, the
// error says the parameters "cannot be validated").
func checkContent(q *baton.Queue, p SendParams, batch bool) error {
	if p.Body == "" {
		return baton.MissingParameter("MessageBody")
	}
	if !validChars(p.Body) {
		return baton.Errorf(baton.ErrInvalidMessageContents,
			"Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF")
	}
	attrSize, err := checkMessageAttributes(p.Attributes)
	if err != nil {
		return err
	}
	if size := len(p.Body) + attrSize; size > q.Attributes.MaximumMessageSize {
		verb := "are invalid"
		if batch {
			verb = "cannot be validated"
		}
		return baton.Errorf(baton.ErrInvalidParameterValue,
			"One or more parameters %s. Reason: Message must be shorter than %d bytes.", verb, q.Attributes.MaximumMessageSize)
	}
	return nil
}

// traceHeaderOf returns the X-Ray trace header a message keeps: its
// AWSTraceHeader system attribute, or else the request's header if usable.
// An invalid system attribute is an error.
func traceHeaderOf(p SendParams) (string, error) {
	trace, err := checkSystemAttributes(p.SystemAttributes)
	if err != nil {
		return "", err
	}
	if trace == "" && len(p.TraceHeader) <= maxTraceHeader && validChars(p.TraceHeader) {
		// The X-Ray header of the request (an unusable one is ignored, as
		// it is only a tracing hint); the system attribute overrides it.
		trace = p.TraceHeader
	}
	return trace, nil
}

// sendDelay returns a message's delay in seconds: its DelaySeconds on a
// standard queue, else the queue's. DelaySeconds out of range, or other
// than 0 on a FIFO queue, is an error.
func sendDelay(q *baton.Queue, p SendParams) (int, error) {
	delay := q.Attributes.DelaySeconds
	if p.DelaySeconds != nil {
		d := *p.DelaySeconds
		if d < 0 || d > baton.MaxDelaySeconds {
			return 0, baton.InvalidParameter("DelaySeconds", strconv.Itoa(d), "DelaySeconds must be >= 0 and <= 900.")
		}
		if q.IsFIFO() && d != 0 {
			return 0, baton.InvalidParameter("DelaySeconds", strconv.Itoa(d), notForQueueType)
		}
		if !q.IsFIFO() {
			delay = d
		}
	}
	return delay, nil
}

// dedupOf returns a FIFO message's deduplication id (given, or derived
// from its body) and the key the store deduplicates by within the queue's
// scope; both are empty on a standard queue, where a deduplication id is
// an error.
func dedupOf(q *baton.Queue, p SendParams) (dedupID, key string, err error) {
	if !q.IsFIFO() {
		if p.DedupID != "" || p.EmptyDedupID {
			return "", "", baton.InvalidParameter("MessageDeduplicationId", p.DedupID, notForQueueType)
		}
		return "", "", nil
	}
	dedupID = p.DedupID
	if dedupID == "" && !p.EmptyDedupID {
		dedupID = ContentDedupID(p.Body)
	} else if !validGroupID(dedupID) {
		return "", "", baton.InvalidParameter("MessageDeduplicationId", dedupID,
			"MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
	}
	key = dedupID
	if q.DedupScope == "messageGroup" {
		key = p.GroupID + " " + dedupID // a space is in neither id
	}
	return dedupID, key, nil
}

func checkSystemAttributes(attrs map[string]baton.MessageAttribute) (string, error) {
	trace := ""
	for name, a := range attrs {
		if name != "AWSTraceHeader" {
			return "", baton.Errorf(baton.ErrInvalidParameterValue,
				"Message system attribute name '%s' is invalid.", name)
		}
		if a.DataType != "String" || a.StringValue == "" || !validChars(a.StringValue) {
			return "", baton.Errorf(baton.ErrInvalidParameterValue,
				"Message system attribute 'AWSTraceHeader' must contain a non-empty value of type 'String'.")
		}
		trace = a.StringValue
	}
	return trace, nil
}

// ReceiveParams are the arguments of ReceiveMessage. Nil pointers are
// parameters the request did not carry.
type ReceiveParams struct {
	MaxNumberOfMessages *int
	VisibilityTimeout   *int
	WaitTimeSeconds     *int
	// AttributeNames are the system attributes wanted: the union of the
	// request's AttributeNames and MessageSystemAttributeNames.
	AttributeNames          []string
	MessageAttributeNames   []string
	ReceiveRequestAttemptID string
}

// ReceivedMessage is one message as a receive returns it.
type ReceivedMessage struct {
	MessageID              string
	ReceiptHandle          string
	Body                   string
	MD5OfBody              string
	Attributes             map[string]string
	MessageAttributes      map[string]baton.MessageAttribute
	MD5OfMessageAttributes string
}

var systemAttributeNames = map[string]bool{
	"All": true, "SenderId": true, "SentTimestamp": true, "ApproximateReceiveCount": true,
	"ApproximateFirstReceiveTimestamp": true, "SequenceNumber": true, "MessageDeduplicationId": true,
	"MessageGroupId": true, "AWSTraceHeader": true, "DeadLetterQueueSourceArn": true,
	"SqsManagedSseEnabled": true,
}

// ReceiveMessage leases up to MaxNumberOfMessages visible messages. With a
// wait time (the request's, else the queue's) it blocks until a message
// becomes visible or the wait ends, and answers the moment one does.
func (e *Engine) ReceiveMessage(ctx context.Context, ref QueueRef, p ReceiveParams) ([]ReceivedMessage, error) {
	max, err := checkReceiveParams(p)
	if err != nil {
		return nil, err
	}
	q, waited, err := e.queueThroughOutage(ctx, ref, p)
	if err != nil {
		return nil, err
	}
	wait, vis := receiveTimes(q, p)
	replayKey, msgs, replayed, err := e.replayReceive(ctx, q, p, vis)
	if err != nil {
		return nil, err
	}
	if replayed {
		return e.render(q, msgs, p), nil
	}
	// What a wait for the store has left of the wait time.
	waitFor := time.Duration(wait)*time.Second - waited
	if waitFor < 0 {
		waitFor = 0
	}
	err = e.waitFor(ctx, q.ID, waitFor, func(now time.Time) (done bool, err error) {
		msgs, done, err = e.receiveOnce(ctx, q, now, max, wait, vis)
		return done, err
	})
	if err != nil {
		return nil, err
	}
	e.recordReceived(ctx, q, msgs, p.VisibilityTimeout == nil)
	if replayKey.id != "" && len(msgs) > 0 {
		e.rememberAttempt(ctx, replayKey, msgs)
	}
	return e.render(q, msgs, p), nil
}

// queueThroughOutage loads the queue of a receive. A long poll waits for an
// unavailable store to come back (a failover) as it would for a message, up
// to its wait time (or until the client leaves or the engine closes), and
// reports how much of that wait it spent; the store's error if it did not
// come back.
func (e *Engine) queueThroughOutage(ctx context.Context, ref QueueRef, p ReceiveParams) (*baton.Queue, time.Duration, error) {
	q, err := e.queue(ctx, ref)
	if !errors.Is(err, baton.ErrUnavailable) || p.WaitTimeSeconds == nil || *p.WaitTimeSeconds <= 0 {
		return q, 0, err
	}
	began := e.clock.Now()
	deadline := began.Add(time.Duration(*p.WaitTimeSeconds) * time.Second)
	for errors.Is(err, baton.ErrUnavailable) {
		left := deadline.Sub(e.clock.Now())
		if left <= 0 {
			return nil, 0, err
		}
		if !e.pauseUnavailable(ctx, left) {
			return nil, 0, err
		}
		q, err = e.queue(ctx, ref)
	}
	return q, e.clock.Now().Sub(began), err
}

// checkReceiveParams refuses a receive's out-of-range numbers and unknown
// system attribute names, before the queue is looked up, as AWS does, and
// returns how many messages it may take (1 unless the request says).
func checkReceiveParams(p ReceiveParams) (max int, err error) {
	max = 1
	if p.MaxNumberOfMessages != nil {
		if *p.MaxNumberOfMessages < 1 || *p.MaxNumberOfMessages > baton.MaxBatchEntries {
			return 0, baton.InvalidParameter("MaxNumberOfMessages", strconv.Itoa(*p.MaxNumberOfMessages),
				"Must be between 1 and 10, if provided.")
		}
		max = *p.MaxNumberOfMessages
	}
	if p.WaitTimeSeconds != nil && (*p.WaitTimeSeconds < 0 || *p.WaitTimeSeconds > baton.MaxWaitTimeSeconds) {
		return 0, baton.InvalidParameter("WaitTimeSeconds", strconv.Itoa(*p.WaitTimeSeconds),
			"Must be >= 0 and <= 20, if provided.")
	}
	if p.VisibilityTimeout != nil && (*p.VisibilityTimeout < 0 || *p.VisibilityTimeout > baton.MaxVisibilityTimeout) {
		return 0, baton.InvalidParameter("VisibilityTimeout", strconv.Itoa(*p.VisibilityTimeout),
			"Must be >= 0 and <= 43200, if provided.")
	}
	for _, n := range p.AttributeNames {
		if !systemAttributeNames[n] {
			return 0, errUnknownAttribute(n)
		}
	}
	return max, nil
}

// receiveTimes returns a receive's wait and visibility timeout in seconds:
// the request's where it gives them, else the queue's.
func receiveTimes(q *baton.Queue, p ReceiveParams) (wait, vis int) {
	wait = q.Attributes.ReceiveMessageWaitTimeSeconds
	if p.WaitTimeSeconds != nil {
		wait = *p.WaitTimeSeconds
	}
	vis = q.Attributes.VisibilityTimeout
	if p.VisibilityTimeout != nil {
		vis = *p.VisibilityTimeout
	}
	return wait, vis
}

// replayReceive answers a FIFO receive that repeats a ReceiveRequestAttemptId
// with the messages the first receive of that id leased, if they are all
// still held under its lease (replayed). Otherwise the receive goes on
// afresh, and key, set whenever the request names an attempt id on a FIFO
// queue, is where to remember what it leases.
func (e *Engine) replayReceive(ctx context.Context, q *baton.Queue, p ReceiveParams, vis int) (key attemptKey, msgs []*baton.Message, replayed bool, err error) {
	if !q.IsFIFO() || p.ReceiveRequestAttemptID == "" {
		return key, nil, false, nil
	}
	if !validGroupID(p.ReceiveRequestAttemptID) {
		return key, nil, false, baton.InvalidParameter("ReceiveRequestAttemptId", p.ReceiveRequestAttemptID,
			"ReceiveRequestAttemptId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
	}
	key.queueID, key.id = q.ID, p.ReceiveRequestAttemptID
	msgs, replayed, err = e.replayAttempt(ctx, key, vis)
	return key, msgs, replayed, err
}

// receiveOnce is one try of a receive's waitFor: at the start and at each
// wake-up. It is done with the messages it leased, or done with none when
// the client has gone; it is not done when there is nothing to take, or no
// room under the in-flight limit, so that the receive waits on.
func (e *Engine) receiveOnce(ctx context.Context, q *baton.Queue, now time.Time, max, wait, vis int) ([]*baton.Message, bool, error) {
	ok, err := e.receivable(ctx, q, now, wait)
	if err != nil || !ok {
		return nil, false, err
	}
	if ctx.Err() != nil {
		// The client has gone (a long poll it gave up on, woken by
		// a send or a release): a lease taken now would hide the
		// message for a whole visibility timeout with no one to
		// work on it.
		return nil, true, nil
	}
	msgs, found, err := e.leaseVisible(ctx, q, now, max, vis)
	if err != nil {
		return nil, false, err
	}
	if len(msgs) == 0 && found {
		// Every round dead-lettered what it found: more may be visible.
		return nil, false, errLookAgain
	}
	return msgs, len(msgs) > 0, nil
}

// receivable tells whether a receive may lease now: a message is visible and
// the queue is under the in-flight limit. Over the limit, a receive that
// does not wait is refused (a standard queue's) or gets nothing (a FIFO
// queue's); one that waits marks itself to be woken by the next delete, then
// looks again, so that a delete since the first look is not missed.
//
// With room known to be left (room.go) it does not count: the receive then
// looks for visible messages itself, and finding none is the same answer.
// While another receive counts the queue it waits for that count, which may
// leave room known.
func (e *Engine) receivable(ctx context.Context, q *baton.Queue, now time.Time, wait int) (bool, error) {
	if e.room.roomy(q.ID, now, e.inFlightLimit) ||
		e.room.awaitCount(ctx, q.ID) && e.room.roomy(q.ID, now, e.inFlightLimit) {
		return true, nil
	}
	// Only the in-flight count and "any visible?" matter here.
	base, done := e.room.counting(q.ID)
	st, err := e.store.MessageStats(ctx, baton.MessageStatsParams{QueueID: q.ID, Now: now, Bound: 1})
	if err == nil {
		e.room.counted(q.ID, now, base, st.InFlight)
	}
	done()
	if err != nil {
		return false, storeErr(err, "message stats")
	}
	if st.InFlight >= e.inFlightLimit {
		if wait == 0 && !q.IsFIFO() { // a FIFO receive just gets nothing
			return false, baton.Errorf(baton.ErrOverLimit, "Too many messages in flight for queue %s.", q.Name)
		}
		if wait == 0 {
			return false, nil
		}
		// Wait for a delete to make room; it may have come since the look.
		e.waitForRoom(q.ID)
		if st, err = e.store.MessageStats(ctx, baton.MessageStatsParams{QueueID: q.ID, Now: now, Bound: 1}); err != nil {
			return false, storeErr(err, "message stats")
		}
		if st.InFlight >= e.inFlightLimit {
			return false, nil
		}
	}
	return st.Visible > 0, nil
}

// leaseVisible leases up to max visible messages for vis seconds and moves
// to the dead-letter queue those received too often, in up to
// maxDeadLetterRounds rounds: messages moved leave room for others. It
// returns the messages kept, and whether the last round found any, so that
// a try that dead-lettered all it found looks again.
func (e *Engine) leaseVisible(ctx context.Context, q *baton.Queue, now time.Time, max, vis int) (msgs []*baton.Message, found bool, err error) {
	var got []*baton.Message
	for range maxDeadLetterRounds {
		got, err = e.lease(ctx, baton.MessageReceiveParams{
			QueueID: q.ID, Now: now, Max: max,
			VisibleAt:       now.Add(time.Duration(vis) * time.Second),
			RetentionCutoff: now.Add(-time.Duration(q.Attributes.MessageRetentionPeriod) * time.Second),
		})
		if err != nil {
			return nil, false, storeErr(err, "receive messages")
		}
		// The messages are leased now, whatever the client does (see lease).
		var unmoved []*baton.Message
		if msgs, unmoved, err = e.deadLetter(context.WithoutCancel(ctx), q, got, now); err != nil {
			return e.afterFailedMove(context.WithoutCancel(ctx), q, msgs, unmoved, now, err)
		}
		if len(msgs) > 0 || len(got) == 0 {
			break
		}
	}
	return msgs, len(got) > 0, nil
}

// recordReceived gives the ledger a receive event for each message leased,
// with the client the context names and, when there are several, one id
// for the messages received together; a receive that leased nothing tells
// the ledger the client is still there. queueTimeout says the receive
// gave no VisibilityTimeout: its leases are the queue's. A client that
// left while its messages were leased (a long poll it gave up on as a
// message came: the lease is made whatever the client does, see lease)
// gets no answer: its leases are held by no one (ledger.Event.ClientLeft),
// and it is not seen. The leases are noted in the request's answer
// (ledger.WithAnswer), should the client leave as it is written; a
// request with an answer sees its client only once the answer went out
// (Engine.AnswerWent, ledger.Event.Answering).
func (e *Engine) recordReceived(ctx context.Context, q *baton.Queue, msgs []*baton.Message, queueTimeout bool) {
	client, left, answer := ledger.ClientFrom(ctx), ctx.Err() != nil, ledger.AnswerOf(ctx)
	if len(msgs) == 0 {
		seen := ledger.Event{Kind: ledger.KindSeen, QueueID: q.ID, At: e.clock.Now(), Client: client}
		switch {
		case left:
		case answer != nil:
			answer.See(seen)
		default:
			e.record(seen)
		}
		return
	}
	var batch uint64
	if len(msgs) > 1 {
		batch = ids.NewUint64()
	}
	for _, m := range msgs {
		ev := ledger.Event{
			Kind: ledger.KindReceive, QueueID: q.ID, MessageID: m.ID, Epoch: m.Epoch, At: m.LeasedAt,
			Deadline: m.VisibleAt, ReceiveCount: m.ReceiveCount, SentAt: m.SentAt, Client: client,
			Batch: batch, N: len(msgs), QueueTimeout: queueTimeout, ClientLeft: left, Answering: answer != nil && !left,
		}
		e.record(ev)
		answer.Hand(ev)
	}
}

// AnswerLost tells the lease ledger that the answer a was gathered for
// (ledger.WithAnswer) reached no client: its write failed, or its client
// had gone before it was written. The leases it handed out are held by no
// one (ledger.Event.ClientLeft). It returns how many.
func (e *Engine) AnswerLost(a *ledger.Answer) int { return e.ledger.AnswerLost(a) }

// AnswerWent tells the lease ledger that the answer a was gathered for
// went out to its client: the client is seen, as it is not while its
// answer can still be lost (ledger.Event.Answering).
func (e *Engine) AnswerWent(a *ledger.Answer) { e.ledger.AnswerWent(a) }

func (e *Engine) render(q *baton.Queue, msgs []*baton.Message, p ReceiveParams) []ReceivedMessage {
	out := make([]ReceivedMessage, len(msgs))
	for i, m := range msgs {
		out[i] = e.received(q, m, p)
	}
	return out
}

// received renders a leased message with the attributes the receive asked
// for.
func (e *Engine) received(q *baton.Queue, m *baton.Message, p ReceiveParams) ReceivedMessage {
	r := ReceivedMessage{
		MessageID: m.ID,
		ReceiptHandle: e.receipts.encode(receipt{
			QueueID: q.ID, MessageID: m.ID, Epoch: m.Epoch, LeasedAt: m.LeasedAt,
		}),
		Body:      m.Body,
		MD5OfBody: m.BodyMD5,
	}
	if r.MD5OfBody == "" {
		r.MD5OfBody = MD5OfBody(m.Body)
	}
	if len(p.AttributeNames) > 0 {
		attrs := SystemAttributes(m)
		if !slices.Contains(p.AttributeNames, "All") {
			maps.DeleteFunc(attrs, func(name, _ string) bool { return !slices.Contains(p.AttributeNames, name) })
		}
		if len(attrs) > 0 {
			r.Attributes = attrs
		}
	}
	if sel := selectAttributes(m.Attributes, p.MessageAttributeNames); len(sel) > 0 {
		r.MessageAttributes = sel
		r.MD5OfMessageAttributes = MD5OfAttributes(sel)
	}
	return r
}

// SystemAttributes returns the system attributes SQS shows of m, those
// that have a value, by their names in MessageSystemAttributeNames: what a
// receive asking for All gets, and what the admin API shows of a message.
func SystemAttributes(m *baton.Message) map[string]string {
	attrs := make(map[string]string, 9)
	put := func(name, value string) {
		if value != "" {
			attrs[name] = value
		}
	}
	put("SenderId", m.SenderID)
	millis := func(t time.Time) string { // a time not yet come is no attribute
		if t.IsZero() {
			return ""
		}
		return epochMillis(t)
	}
	put("SentTimestamp", millis(m.SentAt))
	put("ApproximateReceiveCount", strconv.Itoa(m.ReceiveCount))
	put("ApproximateFirstReceiveTimestamp", millis(m.FirstReceivedAt))
	put("AWSTraceHeader", m.TraceHeader)
	put("MessageGroupId", m.GroupID)
	put("MessageDeduplicationId", m.DedupID)
	put("SequenceNumber", m.SequenceNumber)
	put("DeadLetterQueueSourceArn", m.DeadLetterSourceARN)
	return attrs
}

// selectAttributes filters message attributes by a receive's names: "All",
// ".*" or "*" for all, "prefix.*" for every name starting with prefix (AWS
// gives "Hello" and "Help.Me" for "Hel.*"), otherwise exact names.
func selectAttributes(attrs map[string]baton.MessageAttribute, names []string) map[string]baton.MessageAttribute {
	if len(attrs) == 0 || len(names) == 0 {
		return nil
	}
	out := make(map[string]baton.MessageAttribute)
	for _, n := range names {
		if n == "All" || n == ".*" || n == "*" {
			return attrs
		}
		if prefix, ok := strings.CutSuffix(n, ".*"); ok {
			for name, a := range attrs {
				if strings.HasPrefix(name, prefix) {
					out[name] = a
				}
			}
			continue
		}
		if a, ok := attrs[n]; ok {
			out[n] = a
		}
	}
	return out
}

// HandleEntry is one entry of a DeleteMessageBatch.
type HandleEntry struct {
	ID            string
	ReceiptHandle string
}

// VisibilityEntry is one entry of a ChangeMessageVisibilityBatch.
type VisibilityEntry struct {
	ID                string
	ReceiptHandle     string
	VisibilityTimeout *int
}

// DeleteMessage deletes the message a receipt handle names. On a standard
// queue any handle ever issued for the message works, and deleting a message
// that is already gone succeeds.
func (e *Engine) DeleteMessage(ctx context.Context, ref QueueRef, handle string) error {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return err
	}
	return e.deleteHandles(ctx, q, []string{handle})[0]
}

// DeleteMessageBatch deletes up to ten messages; a bad handle fails only
// its entry. The deletions are one store call, so one commit.
func (e *Engine) DeleteMessageBatch(ctx context.Context, ref QueueRef, entries []HandleEntry) ([]string, []BatchError, error) {
	ids := make([]string, len(entries))
	handles := make([]string, len(entries))
	for i, en := range entries {
		ids[i], handles[i] = en.ID, en.ReceiptHandle
	}
	if err := checkBatchIDs("DeleteMessageBatchRequestEntry", ids); err != nil {
		return nil, nil, err
	}
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	ok, failed := batchResults(ids, e.deleteHandles(ctx, q, handles))
	return ok, failed, nil
}

// batchResults splits a batch's entries into those that succeeded and those
// that failed, each in request order.
func batchResults(ids []string, errs []error) ([]string, []BatchError) {
	var ok []string
	var failed []BatchError
	for i, id := range ids {
		if errs[i] != nil {
			failed = append(failed, BatchError{ID: id, Err: baton.AsError(errs[i])})
			continue
		}
		ok = append(ok, id)
	}
	return ok, failed
}

// deleteHandles deletes by each handle, the valid ones in one store call,
// and returns each handle's error: nil if it deleted the message or found
// it already gone (on a standard queue).
func (e *Engine) deleteHandles(ctx context.Context, q *baton.Queue, handles []string) []error {
	errs := make([]error, len(handles))
	rs := make([]receipt, 0, len(handles))
	at := make([]int, 0, len(handles)) // the handle of each store entry
	refs := make([]baton.LeaseRef, 0, len(handles))
	for i, h := range handles {
		r, err := e.decodeReceipt(q, h)
		if err != nil {
			errs[i] = err
			continue
		}
		rs, at = append(rs, r), append(at, i)
		refs = append(refs, baton.LeaseRef{MessageID: r.MessageID, Epoch: r.Epoch})
	}
	if len(refs) == 0 {
		return errs
	}
	now := e.clock.Now()
	outs, err := e.store.MessageDeleteBatch(ctx, baton.MessageDeleteBatchParams{
		QueueID: q.ID, Now: now, RequireLive: q.IsFIFO(), Entries: refs,
	})
	if err != nil {
		err = storeErr(err, "delete messages")
		for j, i := range at {
			errs[i] = err
			e.recordUnanswered(ctx, q, rs[j], now, time.Time{})
		}
		return errs
	}
	client := ledger.ClientFrom(ctx)
	// Deleting a FIFO message that was in flight unblocks its group: the
	// messages after it may be receivable now, so wake the long polls.
	// Deleting any in-flight message makes room under the in-flight limit.
	unblocked, room := false, false
	for j, out := range outs {
		r := rs[j]
		removed := baton.DeleteRemoves(out.Result, q.IsFIFO())
		unblocked = unblocked || q.IsFIFO() && out.Result == baton.LeaseCurrent
		room = room || out.Result == baton.LeaseCurrent
		e.record(ledger.Event{
			Kind: ledger.KindDelete, QueueID: q.ID, MessageID: r.MessageID, Epoch: r.Epoch, At: now, LeasedAt: r.LeasedAt,
			Result: out.Result, StoreEpoch: epochOf(out.Message), Removed: removed, FIFO: q.IsFIFO(), Client: client,
		})
		if q.IsFIFO() && out.Result == baton.LeaseLapsed {
			errs[at[j]] = baton.InvalidParameter("ReceiptHandle", handles[at[j]], "The receipt handle has expired.")
		}
	}
	if unblocked {
		e.notify(q.ID)
	} else if room {
		e.madeRoom(q.ID)
	}
	return errs
}

// ChangeMessageVisibility moves the end of a lease to now+timeout (0 releases
// it). A lease's end may not pass 12 hours after its receive. On a standard
// queue a handle of an earlier receive moves the lease of the message's
// current receive while that one is in flight, as on SQS. A handle whose
// lease lapsed with the message not in flight changes nothing and succeeds,
// as on SQS; so does a superseded handle on a FIFO queue.
func (e *Engine) ChangeMessageVisibility(ctx context.Context, ref QueueRef, handle string, timeout *int) error {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return err
	}
	return e.changeLeases(ctx, q, []VisibilityEntry{{ReceiptHandle: handle, VisibilityTimeout: timeout}}, false)[0]
}

// ChangeMessageVisibilityBatch changes up to ten leases; a bad entry fails
// alone. The changes are one store call, so one commit.
func (e *Engine) ChangeMessageVisibilityBatch(ctx context.Context, ref QueueRef, entries []VisibilityEntry) ([]string, []BatchError, error) {
	ids := make([]string, len(entries))
	for i, en := range entries {
		ids[i] = en.ID
	}
	if err := checkBatchIDs("ChangeMessageVisibilityBatchRequestEntry", ids); err != nil {
		return nil, nil, err
	}
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	ok, failed := batchResults(ids, e.changeLeases(ctx, q, entries, true))
	return ok, failed, nil
}

// changeLeases changes the lease of each entry, the valid ones in one store
// call, and returns each entry's error: nil if it changed the lease (its
// own, or on a standard queue the one that superseded it) or found it
// lapsed. batch says the entries are a ChangeMessageVisibilityBatch
// request's, which errors name by position.
func (e *Engine) changeLeases(ctx context.Context, q *baton.Queue, entries []VisibilityEntry, batch bool) []error {
	errs := make([]error, len(entries))
	rs := make([]receipt, 0, len(entries))
	at := make([]int, 0, len(entries)) // the entry of each store entry
	changes := make([]baton.VisibilityChange, 0, len(entries))
	now := e.clock.Now()
	for i, en := range entries {
		timeoutParam := "VisibilityTimeout"
		if batch {
			// As SQS names it in the entry's failure.
			timeoutParam = "ChangeMessageVisibilityBatchRequestEntry." + strconv.Itoa(i+1) + ".VisibilityTimeout"
		}
		r, end, err := e.checkChange(q, en, timeoutParam, now)
		if err != nil {
			errs[i] = err
			if errors.Is(err, errPastCeiling) {
				e.record(ledger.Event{
					Kind: ledger.KindRefused, QueueID: q.ID, MessageID: r.MessageID, Epoch: r.Epoch, At: now, Deadline: end,
					LeasedAt: r.LeasedAt, Client: ledger.ClientFrom(ctx),
				})
			}
			continue
		}
		rs, at = append(rs, r), append(at, i)
		changes = append(changes, baton.VisibilityChange{MessageID: r.MessageID, Epoch: r.Epoch, VisibleAt: end})
	}
	if len(changes) == 0 {
		return errs
	}
	// SQS's evidence for a handle of an earlier receive (the AWS-validated
	// LocalStack test test_terminate_visibility_timeout_after_receive, a
	// standard queue) is that it still changes the message in flight; for
	// a FIFO queue, where a stale handle cannot delete, nothing says it
	// can change, so there only the current lease's handle does.
	outs, err := e.store.MessageChangeVisibilityBatch(ctx, baton.MessageChangeVisibilityBatchParams{
		QueueID: q.ID, Now: now, AnyLease: !q.IsFIFO(), Entries: changes,
	})
	if err != nil {
		err = storeErr(err, "change visibility")
		for j, i := range at {
			errs[i] = err
			e.recordUnanswered(ctx, q, rs[j], now, changes[j].VisibleAt)
		}
		return errs
	}
	client, progress := ledger.ClientFrom(ctx), ledger.ProgressFrom(ctx)
	// A lease that now ends sooner than it did (a release, or a shortened
	// one) may end before a waiting long poll would look again: wake them
	// to reckon anew. Extensions wake nobody.
	sooner := false
	for j, out := range outs {
		r, end := rs[j], changes[j].VisibleAt
		// The store's message is as it was before the change, its end the
		// lease's.
		shortened := out.Result == baton.LeaseCurrent && out.Message != nil && ledger.Shortens(end, out.Message.VisibleAt)
		e.record(ledger.Event{
			Kind: ledger.KindChange, QueueID: q.ID, MessageID: r.MessageID, Epoch: r.Epoch, At: now, Deadline: end,
			LeasedAt: r.LeasedAt, Result: out.Result, StoreEpoch: epochOf(out.Message), Client: client, Shortened: shortened,
			Progress: progress,
		})
		if out.Result == baton.LeaseGone {
			errs[at[j]] = baton.InvalidParameter("ReceiptHandle", entries[at[j]].ReceiptHandle,
				"Message does not exist or is not available for visibility timeout change.")
		}
		sooner = sooner || out.Result.Changed() && out.Message != nil && end.Before(out.Message.VisibleAt)
	}
	if sooner {
		e.notify(q.ID)
	}
	return errs
}

// recordUnanswered tells the ledger of a delete (end zero) or visibility
// change to end by receipt r, made at now, that the store failed: the
// client is answered 503 and its SDK retries, perhaps after the lease's
// end, and the ledger reads that retry against this attempt's time
// (ledger.Event.Unanswered).
func (e *Engine) recordUnanswered(ctx context.Context, q *baton.Queue, r receipt, now, end time.Time) {
	e.record(ledger.Event{
		Kind: ledger.KindSeen, QueueID: q.ID, MessageID: r.MessageID, Epoch: r.Epoch, At: now, Deadline: end,
		LeasedAt: r.LeasedAt, Client: ledger.ClientFrom(ctx), Unanswered: true,
	})
}

// checkChange checks a visibility change entry and returns its receipt and
// the lease's new end. timeoutParam names VisibilityTimeout when it is
// missing.
func (e *Engine) checkChange(q *baton.Queue, en VisibilityEntry, timeoutParam string, now time.Time) (receipt, time.Time, error) {
	if en.VisibilityTimeout == nil {
		return receipt{}, time.Time{}, baton.MissingParameter(timeoutParam)
	}
	r, err := e.decodeReceipt(q, en.ReceiptHandle)
	if err != nil {
		return r, time.Time{}, err
	}
	t := *en.VisibilityTimeout
	if t < 0 || t > baton.MaxVisibilityTimeout {
		return r, time.Time{}, baton.InvalidParameter("VisibilityTimeout", strconv.Itoa(t), "Must be >= 0 and <= 43200, if provided.")
	}
	end := now.Add(time.Duration(t) * time.Second)
	if end.Sub(r.LeasedAt) > baton.MaxVisibilityTimeout*time.Second {
		return r, end, pastCeiling{baton.InvalidParameter("VisibilityTimeout", strconv.Itoa(t),
			"Total VisibilityTimeout for the message is beyond the limit [43200 seconds]")}
	}
	return r, end, nil
}

// errPastCeiling marks a visibility change refused because it would end
// its lease more than 12 hours after the receive (pastCeiling): the ledger
// counts these refusals.
var errPastCeiling = errors.New("past the 12-hour ceiling")

// pastCeiling is the error of a change refused by the 12-hour ceiling: the
// SQS error, which is also errPastCeiling.
type pastCeiling struct{ error }

func (e pastCeiling) Unwrap() []error { return []error{e.error, errPastCeiling} }

// decodeReceipt authenticates a handle and checks it belongs to q.
func (e *Engine) decodeReceipt(q *baton.Queue, handle string) (receipt, error) {
	if handle == "" {
		return receipt{}, baton.MissingParameter("ReceiptHandle")
	}
	r, ok := e.receipts.decode(handle)
	if !ok {
		return r, baton.Errorf(baton.ErrReceiptHandleIsInvalid, "The input receipt handle %q is not a valid receipt handle.", handle)
	}
	if r.QueueID != q.ID {
		return r, baton.Errorf(baton.ErrReceiptHandleIsInvalid, "The receipt handle %q is not valid for this queue.", handle)
	}
	return r, nil
}

// String describes a BatchError for logs.
func (b BatchError) String() string { return fmt.Sprintf("%s: %v", b.ID, b.Err) }
