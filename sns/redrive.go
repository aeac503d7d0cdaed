package sns

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

// checkRedrivePolicy checks a subscription's RedrivePolicy,
// {"deadLetterTargetArn":"<SQS queue ARN>"}, with AWS's texts; the queue
// need not exist yet (AWS accepts it, and a copy that cannot reach it is
// logged as lost). Another member, such as an SQS queue's
// maxReceiveCount, is refused as AWS refuses it ("RedrivePolicy: invalid
// JSON. Attribute maxReceiveCount is unknown.", seen answered by AWS); of
// several, the first in name order is named. "" removes the policy.
func checkRedrivePolicy(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &p); err != nil || p == nil {
		reason := "not a JSON object"
		if err != nil {
			reason = err.Error()
		}
		return "", invalidParameter("RedrivePolicy: failed to parse JSON. %s", reason)
	}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if k != "deadLetterTargetArn" {
			return "", invalidParameter("RedrivePolicy: invalid JSON. Attribute %s is unknown.", k)
		}
	}
	var arn string
	if raw, ok := p["deadLetterTargetArn"]; !ok || json.Unmarshal(raw, &arn) != nil {
		return "", invalidParameter("RedrivePolicy: deadLetterTargetArn is an invalid arn")
	}
	if _, ok := engine.QueueRefOfARN(arn); !ok {
		return "", invalidParameter("RedrivePolicy: deadLetterTargetArn is an invalid arn")
	}
	return v, nil
}

// deadLetterQueue is the queue of a subscription's RedrivePolicy, ok false
// if it has none.
func deadLetterQueue(sub *baton.Subscription) (engine.QueueRef, string, bool) {
	var p struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	if json.Unmarshal([]byte(sub.Attributes["RedrivePolicy"]), &p) != nil {
		return engine.QueueRef{}, "", false
	}
	q, ok := engine.QueueRefOfARN(p.DeadLetterTargetArn)
	return q, p.DeadLetterTargetArn, ok
}

// Outcome is what became of one subscription's copy of a publish.
type Outcome int

const (
	// Delivered: the copy is durable in its queue (sqs), or the endpoint
	// took it (http/https).
	Delivered Outcome = iota
	// Queued: the copy is durable in Baton's delivery queue and will be
	// tried on the endpoint, with retries (http/https).
	Queued
	// DeadLettered: the copy could not be delivered and is durable in the
	// subscription's dead-letter queue.
	DeadLettered
	// Lost: the copy could not be delivered and the subscription has no
	// dead-letter queue that took it; a log line says why.
	Lost
)

// String names the outcome as logs and metrics do.
func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Queued:
		return "queued"
	case DeadLettered:
		return "dead_lettered"
	default:
		return "lost"
	}
}

// undeliverable sends a copy that cannot be delivered to the
// subscription's dead-letter queue, as SNS sends it what it tried to
// deliver, and says where it went. Without a dead-letter queue, or one
// that refuses it for good, the copy is lost, as on AWS, with a log line
// saying so. An error means the dead-letter queue's store failed: the copy
// may yet be taken, and the caller must not forget it.
func (s *Service) undeliverable(ctx context.Context, sub *baton.Subscription, messageID string, copy engine.SendParams, why string) (Outcome, error) {
	q, arn, ok := deadLetterQueue(sub)
	if !ok {
		s.log.Warn("sns: a copy could not be delivered and the subscription has no dead-letter queue (RedrivePolicy); the copy is dropped",
			"subscription", SubscriptionARN(sub), "endpoint", sub.Endpoint, "message_id", messageID, "reason", why)
		return Lost, nil
	}
	dlq, err := s.engine.GetQueue(ctx, q)
	if err == nil {
		// Its Policy is asked as the subscribed queue's is (queuepolicy.go).
		policy := s.checkQueuePolicy(sub, dlq, arn)
		if policy.refuse != "" {
			s.log.Error("sns: a copy could not be delivered and its dead-letter queue's Policy does not let the topic send it there; the copy is dropped",
				"subscription", SubscriptionARN(sub), "endpoint", sub.Endpoint, "dead_letter_queue", arn, "message_id", messageID,
				"reason", why, "dlq_reason", policy.refuse)
			return Lost, nil
		}
		if _, err = s.engine.SendMessageToQueue(ctx, dlq, copy); err == nil {
			s.warnDelivered(sub, arn, policy)
		}
	}
	if err == nil {
		s.log.Info("sns: a copy that could not be delivered went to the subscription's dead-letter queue",
			"subscription", SubscriptionARN(sub), "endpoint", sub.Endpoint, "dead_letter_queue", arn, "message_id", messageID, "reason", why)
		return DeadLettered, nil
	}
	if e := (*baton.Error)(nil); errors.As(err, &e) && e.Code != baton.ErrInternal && e.Code != baton.ErrServiceUnavailable {
		s.log.Error("sns: a copy could not be delivered and its dead-letter queue refused it; the copy is dropped",
			"subscription", SubscriptionARN(sub), "endpoint", sub.Endpoint, "dead_letter_queue", arn, "message_id", messageID,
			"reason", why, "dlq_code", e.Code, "dlq_reason", e.Message)
		return Lost, nil
	}
	return Lost, err
}
