package sns

import (
	"context"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

// checkFIFODeadLetter: a FIFO topic's subscription of a FIFO queue must
// have a FIFO queue as its dead-letter queue, refused with AWS's text as
// recorded in 2025; a standard queue's subscription of a FIFO topic may
// have a standard one, as AWS allows.
func checkFIFODeadLetter(topic, protocol, endpoint, redrivePolicy string) error {
	if !baton.IsFIFOName(topic) || protocol != "sqs" || redrivePolicy == "" {
		return nil
	}
	if q, ok := engine.QueueRefOfARN(endpoint); !ok || !baton.IsFIFOName(q.Name) {
		return nil
	}
	dlq, _, ok := deadLetterQueue(&baton.Subscription{Attributes: map[string]string{"RedrivePolicy": redrivePolicy}})
	if ok && baton.IsFIFOName(dlq.Name) {
		return nil
	}
	return invalidParameter("RedrivePolicy: must use a FIFO queue as DLQ for a FIFO Subscription to a FIFO Topic.")
}

// checkSubscriptionChange checks, for SetSubscriptionAttributes, what an
// attribute's new value asks of the subscription's topic: a FIFO
// dead-letter queue, and room for one more filter policy when the
// subscription had none.
func (s *Service) checkSubscriptionChange(ctx context.Context, sub *baton.Subscription, name string, attrs map[string]string) error {
	switch name {
	case "RawMessageDelivery":
		return checkRawDelivery(sub.Protocol, attrs)
	case "RedrivePolicy":
		return checkFIFODeadLetter(sub.Topic, sub.Protocol, sub.Endpoint, attrs["RedrivePolicy"])
	case "FilterPolicy":
		if attrs["FilterPolicy"] == "" || sub.Attributes["FilterPolicy"] != "" {
			return nil
		}
		t := &baton.Topic{Region: sub.Region, Account: sub.Account, Name: sub.Topic}
		return s.checkAddedFilterPolicy(ctx, t, sub.ID)
	}
	return nil
}
