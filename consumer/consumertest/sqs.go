package consumertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/consumer"
)

// APIError is an error as SQS answers it; it satisfies smithy.APIError's
// methods, so the runtime reads it like an SDK error.
type APIError struct {
	// Code is the SQS error code, e.g. "RequestThrottled".
	Code string
	// Message is the error text.
	Message string
}

// Error renders the error as the SDK does.
func (e *APIError) Error() string { return "api error " + e.Code + ": " + e.Message }

// ErrorCode returns the SQS error code.
func (e *APIError) ErrorCode() string { return e.Code }

// ErrorMessage returns the message.
func (e *APIError) ErrorMessage() string { return e.Message }

// ErrorFault says whose fault the error is: the server's for internal
// errors and unavailability, the caller's otherwise. With it an APIError is
// a smithy.APIError, as the SDK's errors are.
func (e *APIError) ErrorFault() smithy.ErrorFault {
	switch e.Code {
	case "InternalError", "InternalFailure", "ServiceUnavailable":
		return smithy.FaultServer
	}
	return smithy.FaultClient
}

var _ smithy.APIError = (*APIError)(nil)

// Throttled is the error SQS answers when a caller exceeds its rate.
func Throttled() error { return &APIError{Code: "RequestThrottled", Message: "Rate exceeded"} }

// ErrLostResponse is what a call whose response was lost returns by default.
var ErrLostResponse = errors.New("consumertest: response lost (connection reset)")

// Call is one call the fake received.
type Call struct {
	// Op is the action name, e.g. "ChangeMessageVisibilityBatch".
	Op string
	// N counts calls of this Op, from 1.
	N int
	// Time is the fake time of the call.
	Time time.Time
	// Input is the request, e.g. *sqs.ReceiveMessageInput.
	Input any
}

// Fault says how one call misbehaves.
type Fault struct {
	// Delay makes the call wait this long on the fake clock first (a slow
	// call); it ends early with the context's error if the caller gives up.
	Delay time.Duration
	// Err fails the call without doing it (a lost or throttled request).
	Err error
	// LoseResponse does the call, then fails it with Err (ErrLostResponse
	// if Err is nil): the caller cannot tell it happened.
	LoseResponse bool
	// FailEntries fails the batch entries whose receipt handles it names,
	// with the given error code (for example "InternalError").
	FailEntries map[string]string
}

// FaultFunc decides the fault for a call; the zero Fault is none.
type FaultFunc func(c Call) Fault

// SQS is an in-memory fake of the SQS actions consumer.Client uses. It is
// safe for concurrent use. Create queues with CreateQueue.
type SQS struct {
	clock clock.Clock

	mu     sync.Mutex
	queues map[string]*queue
	names  map[string]*queue
	seq    int
	notify chan struct{}
	fault  FaultFunc
	calls  []Call
	counts map[string]int
}

var _ consumer.Client = (*SQS)(nil)

type queue struct {
	name, url, arn string
	fifo           bool
	attrs          map[string]string
	msgs           []*message
	dedup          map[string]sent
}

// sent is the first send with a deduplication id: when, and the message.
type sent struct {
	at time.Time
	id string
}

type message struct {
	id, body     string
	attrs        map[string]types.MessageAttributeValue
	group, dedup string
	trace        string
	seq          int
	sentAt       time.Time
	visibleAt    time.Time
	receives     int
	firstReceive time.Time
	epoch        int
	leasedAt     map[int]time.Time
	leased       bool
	deleted      bool
	// dlSource is the ARN of the queue whose RedrivePolicy moved the
	// message here, if any.
	dlSource string
}

// NewSQS returns a fake with no queues, on the given clock.
func NewSQS(clock clock.Clock) *SQS {
	return &SQS{clock: clock, queues: map[string]*queue{}, names: map[string]*queue{},
		notify: make(chan struct{}), counts: map[string]int{}}
}

// SetFaults sets the fault injector (nil: no faults).
func (s *SQS) SetFaults(f FaultFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// CreateQueue creates a queue (FIFO if the name ends in .fifo) and returns
// its URL. attrs are returned by GetQueueAttributes; VisibilityTimeout
// (default 30) is the lease length receives use unless they ask for one.
func (s *SQS) CreateQueue(name string, attrs map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := &queue{name: name, url: "https://sqs.test/000000000000/" + name,
		arn: "arn:aws:sqs:us-east-1:000000000000:" + name, fifo: strings.HasSuffix(name, ".fifo"),
		attrs: map[string]string{"VisibilityTimeout": "30", "MessageRetentionPeriod": "345600",
			"ReceiveMessageWaitTimeSeconds": "0", "DelaySeconds": "0"}, dedup: map[string]sent{}}
	for k, v := range attrs {
		q.attrs[k] = v
	}
	if rp, ok := q.attrs["RedrivePolicy"]; ok {
		q.attrs["RedrivePolicy"] = normalRedrive(rp)
	}
	if q.fifo {
		q.attrs["FifoQueue"] = "true"
	}
	q.attrs["QueueArn"] = q.arn
	s.queues[q.url] = q
	s.names[name] = q
	return q.url
}

// normalRedrive renders a RedrivePolicy as SQS answers it, the count a
// number even if it was given as a string; one it cannot read stays as
// given.
func normalRedrive(rp string) string {
	n, arn, err := consumer.ParseRedrivePolicy(rp)
	if err != nil {
		return rp
	}
	b, err := json.Marshal(struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     int    `json:"maxReceiveCount"`
	}{arn, n})
	if err != nil {
		return rp
	}
	return string(b)
}

// Calls returns the calls made so far of the given ops (all ops if none).
func (s *SQS) Calls(ops ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if len(ops) == 0 || slices.Contains(ops, c.Op) {
			out = append(out, c)
		}
	}
	return out
}

// MessageState is a message as the fake holds it.
type MessageState struct {
	// ID and Body are the message's MessageId and body.
	ID, Body string
	// Group is the MessageGroupId.
	Group string
	// Receives is ApproximateReceiveCount.
	Receives int
	// VisibleAt is when the message is (or was) visible again.
	VisibleAt time.Time
	// InFlight is true while a lease holds it.
	InFlight bool
	// Deleted is true once deleted.
	Deleted bool
	// Attributes are the message attributes it was sent with.
	Attributes map[string]types.MessageAttributeValue
	// SentAt and FirstReceive are the send and first receive times.
	SentAt, FirstReceive time.Time
}

// Messages returns the queue's messages, deleted ones included, in send
// order.
func (s *SQS) Messages(url string) []MessageState {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[url]
	if q == nil {
		return nil
	}
	now := s.clock.Now()
	out := make([]MessageState, 0, len(q.msgs))
	for _, m := range q.msgs {
		out = append(out, MessageState{ID: m.id, Body: m.body, Group: m.group, Receives: m.receives,
			VisibleAt: m.visibleAt, InFlight: m.inFlight(now), Deleted: m.deleted, Attributes: m.attrs,
			SentAt: m.sentAt, FirstReceive: m.firstReceive})
	}
	return out
}

// Send puts a message on a queue (group for FIFO queues) and returns its id.
func (s *SQS) Send(url, body, group string) string {
	in := &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body}
	if group != "" {
		in.MessageGroupId = &group
		dedup := fmt.Sprintf("d%d", s.nextSeq())
		in.MessageDeduplicationId = &dedup
	}
	out, err := s.send(in)
	if err != nil {
		panic(err)
	}
	return *out.MessageId
}

func (s *SQS) nextSeq() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

func (m *message) inFlight(now time.Time) bool {
	return m.leased && !m.deleted && now.Before(m.visibleAt)
}

// begin records a call and applies its fault's delay and request failure.
func (s *SQS) begin(ctx context.Context, op string, in any) (Fault, error) {
	s.mu.Lock()
	s.counts[op]++
	c := Call{Op: op, N: s.counts[op], Time: s.clock.Now(), Input: in}
	s.calls = append(s.calls, c)
	f := s.fault
	s.mu.Unlock()
	var fl Fault
	if f != nil {
		fl = f(c)
	}
	if fl.Delay > 0 {
		t := s.clock.NewTimer(fl.Delay)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return fl, ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return fl, err
	}
	if fl.Err != nil && !fl.LoseResponse {
		return fl, fl.Err
	}
	return fl, nil
}

// end applies a lost response.
func end[T any](fl Fault, out T, err error) (T, error) {
	if err == nil && fl.LoseResponse {
		var zero T
		if fl.Err != nil {
			return zero, fl.Err
		}
		return zero, ErrLostResponse
	}
	return out, err
}

func (s *SQS) wake() {
	close(s.notify)
	s.notify = make(chan struct{})
}

func queueErr(url string) error {
	return &APIError{Code: "AWS.SimpleQueueService.NonExistentQueue", Message: "The specified queue does not exist: " + url}
}

// ReceiveMessage implements consumer.Client. It long-polls on the fake
// clock.
func (s *SQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	fl, err := s.begin(ctx, "ReceiveMessage", in)
	if err != nil {
		return nil, err
	}
	out, err := s.receive(ctx, in)
	return end(fl, out, err)
}

// checkReceive refuses the parameters SQS refuses, before it looks for the
// queue, as SQS does. A zero parameter is one the SDK leaves out.
func checkReceive(in *sqs.ReceiveMessageInput) error {
	bad := func(name string, v int32, reason string) error {
		return &APIError{Code: "InvalidParameterValue", Message: fmt.Sprintf("Value %d for parameter %s is invalid. Reason: %s", v, name, reason)}
	}
	switch {
	case in.MaxNumberOfMessages < 0 || in.MaxNumberOfMessages > 10:
		return bad("MaxNumberOfMessages", in.MaxNumberOfMessages, "Must be between 1 and 10, if provided.")
	case in.WaitTimeSeconds < 0 || in.WaitTimeSeconds > 20:
		return bad("WaitTimeSeconds", in.WaitTimeSeconds, "Must be >= 0 and <= 20, if provided.")
	case in.VisibilityTimeout < 0 || in.VisibilityTimeout > 43200:
		return bad("VisibilityTimeout", in.VisibilityTimeout, "Must be >= 0 and <= 43200, if provided.")
	}
	return nil
}

func (s *SQS) receive(ctx context.Context, in *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
	if err := checkReceive(in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	q := s.queues[deref(in.QueueUrl)]
	if q == nil {
		s.mu.Unlock()
		return nil, queueErr(deref(in.QueueUrl))
	}
	wait := time.Duration(in.WaitTimeSeconds) * time.Second
	if in.WaitTimeSeconds == 0 {
		n, _ := strconv.Atoi(q.attrs["ReceiveMessageWaitTimeSeconds"])
		wait = time.Duration(n) * time.Second
	}
	vis := time.Duration(in.VisibilityTimeout) * time.Second
	if in.VisibilityTimeout == 0 {
		n, _ := strconv.Atoi(q.attrs["VisibilityTimeout"])
		vis = time.Duration(n) * time.Second
	}
	max := int(in.MaxNumberOfMessages)
	if max == 0 {
		max = 1
	}
	s.mu.Unlock()
	deadline := s.clock.Now().Add(wait)
	for {
		s.mu.Lock()
		now := s.clock.Now()
		ch := s.notify
		dlq, maxReceives := s.deadLetter(q)
		before := 0
		if dlq != nil {
			before = len(dlq.msgs)
		}
		msgs := q.take(now, max, vis, dlq, maxReceives)
		if dlq != nil && len(dlq.msgs) > before {
			s.wake() // the dead-letter queue's long polls
		}
		next := q.nextVisible(now)
		s.mu.Unlock()
		if len(msgs) > 0 || !now.Before(deadline) {
			return &sqs.ReceiveMessageOutput{Messages: msgs}, nil
		}
		until := deadline
		if !next.IsZero() && next.Before(until) {
			until = next
		}
		t := s.clock.NewTimer(until.Sub(now))
		select {
		case <-ch:
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

// nextVisible is when the next hidden message becomes visible (zero: none).
func (q *queue) nextVisible(now time.Time) time.Time {
	var next time.Time
	for _, m := range q.msgs {
		if !m.deleted && m.visibleAt.After(now) && (next.IsZero() || m.visibleAt.Before(next)) {
			next = m.visibleAt
		}
	}
	return next
}

// deadLetter returns the queue's dead-letter queue and maxReceiveCount, if
// its RedrivePolicy names a queue of the fake.
func (s *SQS) deadLetter(q *queue) (*queue, int) {
	rp, ok := q.attrs["RedrivePolicy"]
	if !ok {
		return nil, 0
	}
	n, arn, err := consumer.ParseRedrivePolicy(rp)
	if err != nil {
		return nil, 0
	}
	for _, d := range s.queues {
		if d.arn == arn {
			return d, n
		}
	}
	return nil, 0
}

// take leases up to max visible messages. FIFO: groups in order of their
// oldest message, each from its head up to its first in-flight message.
// A message it would take that has been received maxReceives times already
// moves to dlq instead (if dlq is not nil), as SQS moves it inside a
// receive: with its id, body, attributes and receive count.
func (q *queue) take(now time.Time, max int, vis time.Duration, dlq *queue, maxReceives int) []types.Message {
	var picked []*message
	moved := map[*message]bool{}
	// pick takes m unless it moves; it reports whether it took m.
	pick := func(m *message) bool {
		if dlq != nil && m.receives >= maxReceives {
			moved[m] = true
			return false
		}
		picked = append(picked, m)
		return true
	}
	if !q.fifo {
		for _, m := range q.msgs {
			if len(picked) == max {
				break
			}
			if !m.deleted && !m.visibleAt.After(now) {
				pick(m)
			}
		}
	} else {
		var order []string
		byGroup := map[string][]*message{}
		for _, m := range q.msgs {
			if m.deleted {
				continue
			}
			if _, ok := byGroup[m.group]; !ok {
				order = append(order, m.group)
			}
			byGroup[m.group] = append(byGroup[m.group], m)
		}
		for _, g := range order {
			for _, m := range byGroup[g] {
				if len(picked) == max || m.inFlight(now) {
					break
				}
				if !m.visibleAt.After(now) {
					pick(m)
				}
			}
		}
	}
	if len(moved) > 0 {
		kept := q.msgs[:0]
		for _, m := range q.msgs {
			if !moved[m] {
				kept = append(kept, m)
				continue
			}
			m.leased, m.visibleAt, m.dlSource = false, now, q.arn
			dlq.msgs = append(dlq.msgs, m)
		}
		q.msgs = kept
	}
	out := make([]types.Message, len(picked))
	for i, m := range picked {
		m.receives++
		m.epoch++
		m.leased = true
		m.visibleAt = now.Add(vis)
		if m.leasedAt == nil {
			m.leasedAt = map[int]time.Time{}
		}
		m.leasedAt[m.epoch] = now
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		out[i] = q.render(m)
	}
	return out
}

func (q *queue) render(m *message) types.Message {
	attrs := map[string]string{
		"ApproximateReceiveCount":          strconv.Itoa(m.receives),
		"SentTimestamp":                    strconv.FormatInt(m.sentAt.UnixMilli(), 10),
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
		"SenderId":                         "AIDATEST",
	}
	if m.group != "" {
		attrs["MessageGroupId"] = m.group
	}
	if q.fifo {
		attrs["MessageDeduplicationId"] = m.dedup
		attrs["SequenceNumber"] = strconv.Itoa(m.seq)
	}
	if m.trace != "" {
		attrs["AWSTraceHeader"] = m.trace
	}
	if m.dlSource != "" {
		attrs["DeadLetterQueueSourceArn"] = m.dlSource
	}
	id, body := m.id, m.body
	handle := q.url + "|" + m.id + "|" + strconv.Itoa(m.epoch)
	var ma map[string]types.MessageAttributeValue
	if len(m.attrs) > 0 {
		ma = map[string]types.MessageAttributeValue{}
		for k, v := range m.attrs {
			ma[k] = v
		}
	}
	return types.Message{MessageId: &id, Body: &body, ReceiptHandle: &handle, Attributes: attrs, MessageAttributes: ma}
}

// find decodes a receipt handle of q.
func (q *queue) find(handle string) (*message, int, error) {
	p := strings.Split(handle, "|")
	if len(p) != 3 || p[0] != q.url {
		return nil, 0, &APIError{Code: "ReceiptHandleIsInvalid", Message: fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", handle)}
	}
	epoch, err := strconv.Atoi(p[2])
	if err != nil {
		return nil, 0, &APIError{Code: "ReceiptHandleIsInvalid", Message: fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", handle)}
	}
	for _, m := range q.msgs {
		if m.id == p[1] {
			return m, epoch, nil
		}
	}
	return nil, epoch, nil
}

// checkBatch refuses a batch request as SQS does: no entries, more than
// ten, or an entry id that is malformed or repeated. kind names the entry
// type, e.g. "DeleteMessageBatchRequestEntry".
func checkBatch(kind string, ids []string) error {
	if len(ids) == 0 {
		return &APIError{Code: "AWS.SimpleQueueService.EmptyBatchRequest", Message: fmt.Sprintf("There should be at least one %s in the request.", kind)}
	}
	if len(ids) > 10 {
		return &APIError{Code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", Message: fmt.Sprintf("Maximum number of entries per request are 10. You have sent %d.", len(ids))}
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !validBatchID(id) {
			return &APIError{Code: "AWS.SimpleQueueService.InvalidBatchEntryId", Message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."}
		}
		if seen[id] {
			return &APIError{Code: "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", Message: fmt.Sprintf("Id %s repeated.", id)}
		}
		seen[id] = true
	}
	return nil
}

func validBatchID(id string) bool {
	if id == "" || len(id) > 80 {
		return false
	}
	for _, c := range id {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func entryFailure(id string, err error) types.BatchResultErrorEntry {
	var ae *APIError
	code, msg := "InternalError", err.Error()
	if errors.As(err, &ae) {
		code, msg = ae.Code, ae.Message
	}
	idc := id
	return types.BatchResultErrorEntry{Id: &idc, Code: &code, Message: &msg, SenderFault: code != "InternalError"}
}

// batchEntry is what a batch action reads of every entry.
type batchEntry struct{ id, handle string }

// batch does what both batch actions do around their own step: it records
// the call op and applies its fault, refuses the entries as SQS does, finds
// the queue at url, then runs do on each entry (by index) that the fault
// does not fail. It returns the fault, for end, and the ids that succeeded
// and the failures, each in entry order.
func (s *SQS) batch(ctx context.Context, op string, in any, url string, entries []batchEntry,
	do func(q *queue, now time.Time, i int) error) (Fault, []string, []types.BatchResultErrorEntry, error) {
	fl, err := s.begin(ctx, op, in)
	if err != nil {
		return fl, nil, nil, err
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.id
	}
	if err := checkBatch(op+"RequestEntry", ids); err != nil {
		return fl, nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[url]
	if q == nil {
		return fl, nil, nil, queueErr(url)
	}
	now := s.clock.Now()
	var ok []string
	var failed []types.BatchResultErrorEntry
	for i, e := range entries {
		if code, injected := fl.FailEntries[e.handle]; injected {
			failed = append(failed, entryFailure(e.id, &APIError{Code: code, Message: "injected"}))
			continue
		}
		if err := do(q, now, i); err != nil {
			failed = append(failed, entryFailure(e.id, err))
			continue
		}
		ok = append(ok, e.id)
	}
	s.wake()
	return fl, ok, failed, nil
}

// ChangeMessageVisibilityBatch implements consumer.Client.
func (s *SQS) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	entries := make([]batchEntry, len(in.Entries))
	for i, e := range in.Entries {
		entries[i] = batchEntry{id: deref(e.Id), handle: deref(e.ReceiptHandle)}
	}
	fl, ok, failed, err := s.batch(ctx, "ChangeMessageVisibilityBatch", in, deref(in.QueueUrl), entries,
		func(q *queue, now time.Time, i int) error {
			return q.change(now, entries[i].handle, time.Duration(in.Entries[i].VisibilityTimeout)*time.Second)
		})
	if err != nil {
		return nil, err
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{Failed: failed}
	for _, id := range ok {
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: &id})
	}
	return end(fl, out, nil)
}

func (q *queue) change(now time.Time, handle string, vis time.Duration) error {
	m, epoch, err := q.find(handle)
	if err != nil {
		return err
	}
	if m == nil || m.deleted {
		return &APIError{Code: "InvalidParameterValue", Message: fmt.Sprintf("Value %s for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.", handle)}
	}
	if at, ok := m.leasedAt[epoch]; ok && now.Add(vis).Sub(at) > consumer.MaxLease {
		return &APIError{Code: "InvalidParameterValue", Message: fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]", int(vis/time.Second))}
	}
	if q.fifo && epoch != m.epoch {
		return nil // a superseded FIFO handle: success, nothing changes (as Baton)
	}
	if !m.inFlight(now) {
		return nil // a lapsed lease: success, nothing changes (as SQS)
	}
	m.visibleAt = now.Add(vis)
	return nil
}

// DeleteMessageBatch implements consumer.Client.
func (s *SQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	entries := make([]batchEntry, len(in.Entries))
	for i, e := range in.Entries {
		entries[i] = batchEntry{id: deref(e.Id), handle: deref(e.ReceiptHandle)}
	}
	fl, ok, failed, err := s.batch(ctx, "DeleteMessageBatch", in, deref(in.QueueUrl), entries,
		func(q *queue, now time.Time, i int) error { return q.delete(now, entries[i].handle) })
	if err != nil {
		return nil, err
	}
	out := &sqs.DeleteMessageBatchOutput{Failed: failed}
	for _, id := range ok {
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: &id})
	}
	return end(fl, out, nil)
}

// delete deletes the message a receipt handle of q names. A FIFO handle
// that a later receive superseded, or whose lease lapsed, is refused; a
// handle whose message the fake does not hold, or has deleted, succeeds.
func (q *queue) delete(now time.Time, handle string) error {
	m, epoch, err := q.find(handle)
	if err != nil {
		return err
	}
	if m != nil && !m.deleted && q.fifo && (epoch != m.epoch || !m.inFlight(now)) {
		return &APIError{Code: "InvalidParameterValue",
			Message: fmt.Sprintf("Value %s for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.", handle)}
	}
	if m != nil {
		m.deleted = true
	}
	return nil
}

// SendMessage implements consumer.Client.
func (s *SQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	fl, err := s.begin(ctx, "SendMessage", in)
	if err != nil {
		return nil, err
	}
	out, err := s.send(in)
	return end(fl, out, err)
}

func (s *SQS) send(in *sqs.SendMessageInput) (*sqs.SendMessageOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[deref(in.QueueUrl)]
	if q == nil {
		return nil, queueErr(deref(in.QueueUrl))
	}
	if len(in.MessageAttributes) > 10 {
		return nil, &APIError{Code: "InvalidParameterValue", Message: "Number of message attributes [11] exceeds the allowed maximum [10]."}
	}
	now := s.clock.Now()
	s.seq++
	m := &message{id: fmt.Sprintf("m%04d", s.seq), body: deref(in.MessageBody), attrs: in.MessageAttributes,
		group: deref(in.MessageGroupId), dedup: deref(in.MessageDeduplicationId), seq: s.seq, sentAt: now, visibleAt: now}
	if q.fifo {
		if m.group == "" {
			return nil, &APIError{Code: "MissingParameter", Message: "The request must contain the parameter MessageGroupId."}
		}
		if in.DelaySeconds != 0 {
			return nil, &APIError{Code: "InvalidParameterValue", Message: fmt.Sprintf("Value %d for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.", in.DelaySeconds)}
		}
		if m.dedup == "" {
			if q.attrs["ContentBasedDeduplication"] != "true" {
				return nil, &APIError{Code: "InvalidParameterValue", Message: "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"}
			}
			sum := sha256.Sum256([]byte(m.body))
			m.dedup = hex.EncodeToString(sum[:])
		}
		// A duplicate within 5 minutes answers the first send's id and
		// enqueues nothing, even if that message is gone.
		if first, ok := q.dedup[m.dedup]; ok && now.Sub(first.at) < 5*time.Minute {
			return &sqs.SendMessageOutput{MessageId: &first.id}, nil
		}
		q.dedup[m.dedup] = sent{at: now, id: m.id}
	} else {
		m.visibleAt = now.Add(time.Duration(in.DelaySeconds) * time.Second)
	}
	if v, ok := in.MessageSystemAttributes["AWSTraceHeader"]; ok {
		m.trace = deref(v.StringValue)
	}
	q.msgs = append(q.msgs, m)
	s.wake()
	return &sqs.SendMessageOutput{MessageId: &m.id}, nil
}

func names(ns []types.QueueAttributeName) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = string(n)
	}
	return out
}

// GetQueueAttributes implements consumer.Client; it returns the attributes
// named, or every one for "All".
func (s *SQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	fl, err := s.begin(ctx, "GetQueueAttributes", in)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[deref(in.QueueUrl)]
	if q == nil {
		return nil, queueErr(deref(in.QueueUrl))
	}
	now := s.clock.Now()
	attrs := map[string]string{}
	for k, v := range q.attrs {
		attrs[k] = v
	}
	var visible, inflight, delayed int
	for _, m := range q.msgs {
		switch {
		case m.deleted:
		case m.inFlight(now):
			inflight++
		case m.visibleAt.After(now):
			delayed++
		default:
			visible++
		}
	}
	attrs["ApproximateNumberOfMessages"] = strconv.Itoa(visible)
	attrs["ApproximateNumberOfMessagesNotVisible"] = strconv.Itoa(inflight)
	attrs["ApproximateNumberOfMessagesDelayed"] = strconv.Itoa(delayed)
	if !slices.Contains(names(in.AttributeNames), "All") {
		// Only the attributes asked for, as SQS answers.
		for k := range attrs {
			if !slices.Contains(names(in.AttributeNames), k) {
				delete(attrs, k)
			}
		}
	}
	return end(fl, &sqs.GetQueueAttributesOutput{Attributes: attrs}, nil)
}

// GetQueueUrl implements consumer.Client.
func (s *SQS) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	fl, err := s.begin(ctx, "GetQueueUrl", in)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.names[deref(in.QueueName)]
	if q == nil {
		return nil, queueErr(deref(in.QueueName))
	}
	u := q.url
	return end(fl, &sqs.GetQueueUrlOutput{QueueUrl: &u}, nil)
}

// Handles returns the receipt handles in a batch call's input, in entry
// order: for reading Calls.
func Handles(input any) []string {
	var out []string
	switch in := input.(type) {
	case *sqs.ChangeMessageVisibilityBatchInput:
		for _, e := range in.Entries {
			out = append(out, deref(e.ReceiptHandle))
		}
	case *sqs.DeleteMessageBatchInput:
		for _, e := range in.Entries {
			out = append(out, deref(e.ReceiptHandle))
		}
	}
	return out
}

// MessageIDOf returns the message id inside one of the fake's receipt
// handles.
func MessageIDOf(handle string) string {
	p := strings.Split(handle, "|")
	if len(p) != 3 {
		return ""
	}
	return p[1]
}

// Visibilities returns the VisibilityTimeout of each entry of a
// ChangeMessageVisibilityBatch input, in entry order.
func Visibilities(input any) []int32 {
	in, ok := input.(*sqs.ChangeMessageVisibilityBatchInput)
	if !ok {
		return nil
	}
	out := make([]int32, len(in.Entries))
	for i, e := range in.Entries {
		out[i] = e.VisibilityTimeout
	}
	return out
}

// SortedIDs returns the ids of states matching keep, sorted.
func SortedIDs(ms []MessageState, keep func(MessageState) bool) []string {
	var out []string
	for _, m := range ms {
		if keep(m) {
			out = append(out, m.ID)
		}
	}
	sort.Strings(out)
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
