package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
)

// redrivePolicy is a parsed RedrivePolicy attribute.
type redrivePolicy struct {
	target          string // dead-letter queue ARN
	maxReceiveCount int
}

// parseRedrivePolicy reads a RedrivePolicy already checked by
// checkRedrivePolicy; ok is false when none is set.
func parseRedrivePolicy(s string) (p redrivePolicy, ok bool) {
	if s == "" {
		return p, false
	}
	var raw struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if json.Unmarshal([]byte(s), &raw) != nil {
		return p, false
	}
	n := string(raw.MaxReceiveCount)
	if uq, err := strconv.Unquote(n); err == nil {
		n = uq
	}
	count, err := strconv.Atoi(n)
	if err != nil {
		return p, false
	}
	return redrivePolicy{target: raw.DeadLetterTargetArn, maxReceiveCount: count}, true
}

// queueARN is an SQS queue ARN taken apart:
// arn:aws:sqs:<region>:<account>:<name>.
type queueARN struct{ region, account, name string }

// parseARN splits an SQS queue ARN into region, account and name.
func parseARN(arn string) (queueARN, bool) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" || !baton.ValidRegion(parts[3]) || parts[4] == "" || parts[5] == "" {
		return queueARN{}, false
	}
	return queueARN{region: parts[3], account: parts[4], name: parts[5]}, true
}

// QueueRefOfARN names the queue of an SQS queue ARN
// (arn:aws:sqs:<region>:<account>:<name>), as redrive policies and SNS
// subscriptions give it; false if arn is not one.
func QueueRefOfARN(arn string) (QueueRef, bool) {
	q, ok := parseARN(arn)
	return QueueRef{Region: q.region, Account: q.account, Name: q.name}, ok
}

// ValidMessageChars reports whether s holds only the characters SQS (and
// SNS) allow in a message body.
func ValidMessageChars(s string) bool { return validChars(s) }

// ValidNumber reports whether s is a Number attribute's value as SQS (and
// SNS) take it: a decimal of at most 38 significant digits between
// 10^-128 and 10^126.
func ValidNumber(s string) bool { return validNumber(s) }

// deadLetter moves the received messages that have passed the queue's
// maxReceiveCount to its dead-letter queue and returns the others, kept. A
// message is moved inside the receive that would exceed the count, never
// merely because its lease lapsed. Once a move fails (or the dead-letter
// queue cannot be read), it tries no more: unmoved are the messages it was
// to move from that one on, still leased by this receive, and err says
// why (leaseVisible gives them back).
func (e *Engine) deadLetter(ctx context.Context, q *baton.Queue, msgs []*baton.Message, now time.Time) (kept, unmoved []*baton.Message, err error) {
	policy, ok := parseRedrivePolicy(q.Attributes.RedrivePolicy)
	if !ok || policy.target == e.QueueARN(q) {
		// A queue that is its own dead-letter queue keeps its messages:
		// moving one to where it is would only hide it from every receive.
		return msgs, nil, nil
	}
	var dlq *baton.Queue
	kept = msgs[:0]
	for _, m := range msgs {
		if m.ReceiveCount <= policy.maxReceiveCount {
			kept = append(kept, m)
			continue
		}
		if err == nil && dlq == nil {
			// As it stands: one another server deleted a moment ago
			// would fail the move, and so the receive.
			target, _ := parseARN(policy.target)
			dlq, err = e.store.QueueGet(baton.Fresh(ctx), target.region, target.account, target.name)
			if errors.Is(err, baton.ErrNotFound) {
				// The dead-letter queue is gone: deliver as if no policy
				// (every message before this one was kept).
				return msgs, nil, nil
			}
			if err != nil {
				err = fmt.Errorf("get dead-letter queue: %w", err)
			}
		}
		if err == nil {
			err = e.moveToDeadLetter(ctx, q, dlq, m, now)
		}
		if err != nil {
			unmoved = append(unmoved, m)
		}
	}
	return kept, unmoved, err
}

// moveToDeadLetter moves m, leased by a receive at now, from q to dlq.
func (e *Engine) moveToDeadLetter(ctx context.Context, q, dlq *baton.Queue, m *baton.Message, now time.Time) error {
	// Move it only while this receive's lease holds it, unless the lease
	// had no length (VisibilityTimeout 0), which leaves it visible.
	epoch := m.Epoch
	if !m.VisibleAt.After(now) {
		epoch = 0
	}
	out, err := e.store.MessageMove(ctx, baton.MessageMoveParams{
		QueueID: q.ID, MessageID: m.ID, Epoch: epoch, ToQueueID: dlq.ID, Now: now,
		ReceiveCount:        m.ReceiveCount - 1, // this receive did not deliver it
		DeadLetterSourceARN: e.QueueARN(q),
		ResetSentAt:         q.IsFIFO(),
		ReplaceDedupID:      q.IsFIFO(),
	})
	if err != nil {
		return storeErr(err, "dead-letter message")
	}
	if out.Result == baton.LeaseCurrent {
		e.record(ledger.Event{
			Kind: ledger.KindDeadLetter, QueueID: q.ID, MessageID: m.ID, Epoch: m.Epoch, At: now,
			ReceiveCount: m.ReceiveCount - 1, // this receive did not deliver it
		})
		e.notify(dlq.ID)
	}
	return nil
}

// checkRedriveAllowed checks that the dead-letter queue's RedriveAllowPolicy
// lets source use it.
func (e *Engine) checkRedriveAllowed(dlq *baton.Queue, sourceARN, policy string) error {
	allow := dlq.Attributes.RedriveAllowPolicy
	if allow == "" {
		return nil
	}
	var p struct {
		RedrivePermission string   `json:"redrivePermission"`
		SourceQueueArns   []string `json:"sourceQueueArns"`
	}
	_ = json.Unmarshal([]byte(allow), &p) // validated when set
	switch p.RedrivePermission {
	case "denyAll":
	case "byQueue":
		if slices.Contains(p.SourceQueueArns, sourceARN) {
			return nil
		}
	default:
		return nil
	}
	return baton.Errorf(baton.ErrInvalidParameterValue,
		"Value %s for parameter RedrivePolicy is invalid. Reason: Queue %s does not allow this queue to use it as a dead-letter queue.",
		policy, e.QueueARN(dlq))
}

// ListDeadLetterSourceQueuesParams are the arguments of
// ListDeadLetterSourceQueues.
type ListDeadLetterSourceQueuesParams struct {
	MaxResults *int
	NextToken  string
}

// ListDeadLetterSourceQueues lists the queues whose RedrivePolicy names ref
// as their dead-letter queue, in name order.
func (e *Engine) ListDeadLetterSourceQueues(ctx context.Context, ref QueueRef, p ListDeadLetterSourceQueuesParams) ([]*baton.Queue, string, error) {
	dlq, err := e.queue(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	limit := maxListQueues
	if p.MaxResults != nil {
		if *p.MaxResults < 1 || *p.MaxResults > maxListQueues {
			return nil, "", baton.InvalidParameter("MaxResults", strconv.Itoa(*p.MaxResults),
				"MaxResults must be an integer between 1 and 1000.")
		}
		limit = *p.MaxResults
	}
	after, err := decodeToken(p.NextToken)
	if err != nil {
		return nil, "", err
	}
	sources, err := e.sourcesOf(ctx, dlq)
	if err != nil {
		return nil, "", err
	}
	var out []*baton.Queue
	for _, q := range sources {
		if q.Name > after {
			out = append(out, q)
		}
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		if p.MaxResults != nil {
			next = encodeToken(out[limit-1].Name)
		}
	}
	return out, next, nil
}

// sourcesOf returns the queues that use dlq as their dead-letter queue.
func (e *Engine) sourcesOf(ctx context.Context, dlq *baton.Queue) ([]*baton.Queue, error) {
	all, err := e.store.QueueList(ctx, baton.QueueListParams{Region: e.regionOr(dlq.Region), Account: dlq.Account})
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	arn := e.QueueARN(dlq)
	var out []*baton.Queue
	for _, q := range all {
		if p, ok := parseRedrivePolicy(q.Attributes.RedrivePolicy); ok && p.target == arn {
			out = append(out, q)
		}
	}
	return out, nil
}

func encodeToken(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

func decodeToken(tok string) (string, error) {
	if tok == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 {
		return "", baton.Errorf(baton.ErrInvalidParameterValue, "Invalid NextToken value.")
	}
	return string(b), nil
}
