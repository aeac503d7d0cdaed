package sns

import (
	"context"

	"github.com/baton-sqs/baton"
)

// AWS's default quotas on subscriptions (Amazon SNS Developer Guide,
// "Filter policy constraints"; the SNS features page for FIFO topics),
// counted from the store, so that every server of a shared store counts
// the same subscriptions. A count and the creation it allows are not one
// transaction: two servers creating the last subscription allowed at the
// same instant may both succeed.
const (
	// maxFilterPoliciesPerTopic is the most subscriptions of one topic
	// with a filter policy.
	maxFilterPoliciesPerTopic = 200
	// maxFilterPoliciesPerAccount is the most subscriptions with a filter
	// policy of one account, in one region.
	maxFilterPoliciesPerAccount = 10_000
	// maxFIFOSubscriptions is the most subscriptions of one FIFO topic.
	maxFIFOSubscriptions = 100
)

// checkNewSubscription refuses a new subscription of topic t with attrs
// past AWS's quotas: a FIFO topic's subscriptions, and the topic's and the
// account's filter policies (AWS counts a policy only when one is set:
// the quota does not stop a subscription without one).
func (s *Service) checkNewSubscription(ctx context.Context, t *baton.Topic, attrs map[string]string) error {
	policy := attrs["FilterPolicy"] != ""
	if !isFIFO(t) && !policy {
		return nil
	}
	n, err := s.countSubscriptions(ctx, t, "")
	if err != nil {
		return err
	}
	if isFIFO(t) && n.topic >= maxFIFOSubscriptions {
		// AWS's text is not known; the code and status are the model's.
		return baton.Errorf(baton.ErrSNSSubscriptionLimitExceeded,
			"Subscription limit exceeded: a FIFO topic can have at most %d subscriptions", maxFIFOSubscriptions)
	}
	if policy {
		return n.policyQuota()
	}
	return nil
}

// checkAddedFilterPolicy refuses a filter policy set on subscription id of
// topic t, which had none, past the topic's or the account's quota.
func (s *Service) checkAddedFilterPolicy(ctx context.Context, t *baton.Topic, id string) error {
	n, err := s.countSubscriptions(ctx, t, id)
	if err != nil {
		return err
	}
	return n.policyQuota()
}

// subscriptionCounts are the subscriptions of a topic, and those with a
// filter policy of the topic and of its account and region.
type subscriptionCounts struct{ topic, topicPolicies, accountPolicies int }

// countSubscriptions counts from the store, leaving out subscription
// except of the topic.
func (s *Service) countSubscriptions(ctx context.Context, t *baton.Topic, except string) (subscriptionCounts, error) {
	var n subscriptionCounts
	subs, err := s.store.SubscriptionList(ctx, baton.SubscriptionListParams{Region: t.Region, Account: t.Account})
	if err != nil {
		return n, storeErr(err, "list subscriptions")
	}
	for _, sub := range subs {
		mine := sub.Topic == t.Name
		if mine && sub.ID == except {
			continue
		}
		policy := sub.Attributes["FilterPolicy"] != ""
		if mine {
			n.topic++
		}
		if policy {
			n.accountPolicies++
		}
		if policy && mine {
			n.topicPolicies++
		}
	}
	return n, nil
}

// policyQuota refuses one more filter policy past the quotas. AWS's texts
// are not known; the code and status are the model's
// (FilterPolicyLimitExceeded, 403).
func (n subscriptionCounts) policyQuota() error {
	switch {
	case n.topicPolicies >= maxFilterPoliciesPerTopic:
		return baton.Errorf(baton.ErrSNSFilterPolicyLimitExceeded,
			"Filter policy limit exceeded: a topic can have at most %d subscriptions with a filter policy", maxFilterPoliciesPerTopic)
	case n.accountPolicies >= maxFilterPoliciesPerAccount:
		return baton.Errorf(baton.ErrSNSFilterPolicyLimitExceeded,
			"Filter policy limit exceeded: an account can have at most %d subscriptions with a filter policy in a region", maxFilterPoliciesPerAccount)
	}
	return nil
}
