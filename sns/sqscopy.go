package sns

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

// deliverToQueue sends an sqs subscription its copy. It reads the queue
// once, for both the question its Policy answers (queuepolicy.go) and the
// send. A copy the Policy refuses (enforce mode) or the queue refuses for
// good goes to the subscription's dead-letter queue (redrive.go).
func (s *Service) deliverToQueue(ctx context.Context, pub *publication, sub *baton.Subscription) (Outcome, error) {
	q, _ := engine.QueueRefOfARN(sub.Endpoint) // checked at Subscribe
	send := s.copyFor(pub, sub)
	queue, err := s.engine.GetQueue(ctx, q)
	if err == nil {
		policy := s.checkQueuePolicy(sub, queue, sub.Endpoint)
		if policy.refuse != "" {
			pub.note(failed(sub, policy.refuse))
			return s.undeliverable(ctx, sub, pub.id, send, policy.refuse)
		}
		if _, err = s.engine.SendMessageToQueue(ctx, queue, send); err == nil {
			s.warnDelivered(sub, sub.Endpoint, policy)
			pub.note(policy.annotate(delivered(sub)))
			return Delivered, nil
		}
	}
	return s.queueRefused(ctx, pub, sub, send, err)
}

// queueRefused says what became of a copy its queue did not take (err): a
// refusal for good (the queue is gone, or its limits refuse the message)
// sends it to the dead-letter queue; a store failure is returned, for the
// publish to fail and be retried.
func (s *Service) queueRefused(ctx context.Context, pub *publication, sub *baton.Subscription, send engine.SendParams, err error) (Outcome, error) {
	pub.note(failed(sub, err.Error()))
	if e := (*baton.Error)(nil); errors.As(err, &e) && e.Code != baton.ErrInternal && e.Code != baton.ErrServiceUnavailable {
		return s.undeliverable(ctx, sub, pub.id, send, fmt.Sprintf("the queue refused the copy: %s: %s", e.Code, e.Message))
	}
	return Lost, err
}
