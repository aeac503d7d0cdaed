package sns

import (
	"context"
	"strconv"

	"github.com/baton-sqs/baton"
)

// A topic's MaximumMessageSize attribute (Amazon SNS Developer Guide,
// "Publishing large messages with Amazon SNS"; the API reference of
// CreateTopic and SetTopicAttributes): 1,024 to 1,048,576 bytes, by default
// MaxPublishSize, shown only once set. A topic allowing more than
// MaxPublishSize takes at most 100 subscriptions, of Amazon Data Firehose,
// Amazon SQS and Lambda only.
const (
	// MaxTopicMessageSize is the largest MaximumMessageSize, and so the
	// most bytes any publish may carry.
	MaxTopicMessageSize = 1 << 20
	minTopicMessageSize = 1024
	// maxLargeTopicSubscriptions is the most subscriptions of a topic
	// allowing more than MaxPublishSize.
	maxLargeTopicSubscriptions = 100
)

// largeTopicProtocols are the protocols a topic allowing more than
// MaxPublishSize may have subscriptions of.
var largeTopicProtocols = map[string]bool{"sqs": true, "firehose": true, "lambda": true}

// topicMessageSize is the most bytes a publish to t may carry.
func topicMessageSize(t *baton.Topic) int {
	if n, err := strconv.Atoi(t.Attributes["MaximumMessageSize"]); err == nil {
		return n
	}
	return MaxPublishSize
}

// checkMaximumMessageSize checks a MaximumMessageSize value: a whole number
// of bytes in AWS's range.
func checkMaximumMessageSize(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < minTopicMessageSize || n > MaxTopicMessageSize {
		return invalidParameter("MaximumMessageSize Reason: must be a whole number of bytes from %d to %d", minTopicMessageSize, MaxTopicMessageSize)
	}
	return nil
}

// checkLargeTopicSubscription refuses a new subscription of protocol to a
// topic allowing more than MaxPublishSize that AWS does not take: another
// protocol than Firehose, SQS and Lambda, or one more than 100. AWS
// answers InvalidParameter; its texts are not known.
func (s *Service) checkLargeTopicSubscription(ctx context.Context, t *baton.Topic, protocol string) error {
	if topicMessageSize(t) <= MaxPublishSize {
		return nil
	}
	if !largeTopicProtocols[protocol] {
		return invalidParameter("Protocol Reason: a topic whose MaximumMessageSize is over %d takes only firehose, lambda and sqs subscriptions", MaxPublishSize)
	}
	n, err := s.countSubscriptions(ctx, t, "")
	if err != nil {
		return err
	}
	if n.topic >= maxLargeTopicSubscriptions {
		return invalidParameter("Topic Reason: a topic whose MaximumMessageSize is over %d takes at most %d subscriptions", MaxPublishSize, maxLargeTopicSubscriptions)
	}
	return nil
}

// checkLargeTopicFits refuses to raise t's MaximumMessageSize to v, over
// MaxPublishSize, while t has subscriptions such a topic may not have.
// AWS's answer is not known; Baton keeps the topic within the rules it
// applies to new subscriptions.
func (s *Service) checkLargeTopicFits(ctx context.Context, t *baton.Topic, v string) error {
	if n, _ := strconv.Atoi(v); n <= MaxPublishSize {
		return nil
	}
	subs, err := s.store.SubscriptionList(ctx, baton.SubscriptionListParams{Region: t.Region, Account: t.Account, Topic: t.Name})
	if err != nil {
		return storeErr(err, "list subscriptions")
	}
	for _, sub := range subs {
		if !largeTopicProtocols[sub.Protocol] {
			return invalidParameter("MaximumMessageSize Reason: the topic has a subscription of protocol %s; a topic whose MaximumMessageSize is over %d takes only firehose, lambda and sqs subscriptions", sub.Protocol, MaxPublishSize)
		}
	}
	if len(subs) > maxLargeTopicSubscriptions {
		return invalidParameter("MaximumMessageSize Reason: the topic has %d subscriptions; a topic whose MaximumMessageSize is over %d takes at most %d", len(subs), MaxPublishSize, maxLargeTopicSubscriptions)
	}
	return nil
}
