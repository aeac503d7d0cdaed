package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/sns"
)

// TopicListJSON is the dashboard's view of the account's SNS topics
// (GET /admin/api/topics): each topic with its subscriptions and its
// publish counts, and where the recent publishes went.
type TopicListJSON struct {
	Now time.Time `json:"now"`
	// Served is false when the server serves no SNS (its store keeps no
	// topics); the lists are then empty.
	Served bool        `json:"served"`
	Topics []TopicJSON `json:"topics"`
	// Recent are the account's latest publishes in the region, newest
	// first, of the at most 200 the node keeps over all topics.
	Recent []PublishJSON `json:"recent"`
}

// TopicJSON is one topic.
type TopicJSON struct {
	Name          string             `json:"name"`
	ARN           string             `json:"arn"`
	Subscriptions []SubscriptionJSON `json:"subscriptions"`
	// The counts are this node's since it started.
	Publishes uint64 `json:"publishes"`
	Delivered uint64 `json:"delivered"`
	Filtered  uint64 `json:"filtered"`
	Failed    uint64 `json:"failed"`
}

// SubscriptionJSON is one subscription of a topic.
type SubscriptionJSON struct {
	ARN      string `json:"arn"`
	Protocol string `json:"protocol"`
	Endpoint string `json:"endpoint"`
	// Queue is the subscribed queue's name, for an sqs subscription.
	Queue        string `json:"queue,omitempty"`
	Raw          bool   `json:"raw"`
	FilterPolicy string `json:"filter_policy,omitempty"`
	Pending      bool   `json:"pending"`
	// QueuePolicy is Baton's note, for an sqs subscription, that its
	// queue's Policy does not let the topic send (AWS would not deliver
	// the copies, or Baton refuses them with --sns-queue-policies
	// enforce), or that Baton cannot tell; "" when it does. AWS's
	// GetSubscriptionAttributes has no such attribute.
	QueuePolicy string `json:"queue_policy,omitempty"`
}

// PublishJSON is where one publish went.
type PublishJSON struct {
	MessageID string    `json:"message_id"`
	Topic     string    `json:"topic"`
	At        time.Time `json:"at"`
	Subject   string    `json:"subject,omitempty"`
	Error     string    `json:"error,omitempty"`
	Delivered int       `json:"delivered"`
	Filtered  int       `json:"filtered"`
	Failed    int       `json:"failed"`
	// Copies counts every subscription's outcome; Outcomes lists the first
	// 50 of them.
	Copies   int           `json:"copies"`
	Outcomes []OutcomeJSON `json:"outcomes"`
}

// OutcomeJSON is what became of one subscription's copy: delivered,
// filtered (with the policy) or failed (with the reason).
type OutcomeJSON struct {
	Subscription string `json:"subscription"`
	Endpoint     string `json:"endpoint"`
	Queue        string `json:"queue,omitempty"`
	Outcome      string `json:"outcome"`
	Policy       string `json:"policy,omitempty"`
	Reason       string `json:"reason,omitempty"`
	// Warning is Baton's note on a delivered copy that AWS would not have
	// delivered it, or might not have (the queue's Policy).
	Warning string `json:"warning,omitempty"`
}

func (s *Server) viewTopics(r *http.Request) (any, error) {
	out := TopicListJSON{Now: s.now(), Topics: []TopicJSON{}, Recent: []PublishJSON{}}
	if s.sns == nil {
		return out, nil
	}
	out.Served = true
	ref := s.adminRef(r)
	c := sns.Caller{Region: ref.Region, Account: ref.Account}
	region := ref.Region
	if region == "" {
		region = s.engine.Region()
	}
	counts := map[string]sns.TopicCounts{}
	for _, tc := range s.sns.TopicCounts(ref.Account) {
		counts[sns.TopicARN(tc.Region, tc.Account, tc.Topic)] = tc
	}
	arns, err := s.allTopics(r.Context(), c)
	if err != nil {
		return nil, err
	}
	for _, arn := range arns {
		t, err := s.topicJSON(r.Context(), c, arn)
		if err != nil {
			return nil, err
		}
		tc := counts[arn]
		t.Publishes, t.Delivered, t.Filtered, t.Failed = tc.Publishes, tc.Delivered, tc.Filtered, tc.Failed
		out.Topics = append(out.Topics, t)
	}
	for _, p := range s.sns.RecentPublishes(ref.Account, "") {
		if p.Region == region {
			out.Recent = append(out.Recent, publishJSON(p))
		}
	}
	return out, nil
}

// allTopics lists every page of the caller's topics.
func (s *Server) allTopics(ctx context.Context, c sns.Caller) ([]string, error) {
	var all []string
	for next := ""; ; {
		arns, token, err := s.sns.ListTopics(ctx, c, next)
		if err != nil {
			return nil, err
		}
		all = append(all, arns...)
		if next = token; next == "" {
			return all, nil
		}
	}
}

// topicJSON is a topic with its subscriptions and their attributes. A
// subscription removed meanwhile is left out. A pending one is listed as
// ListSubscriptionsByTopic lists it, its ARN PendingConfirmation, without
// attributes: none can be read without its ARN.
func (s *Server) topicJSON(ctx context.Context, c sns.Caller, arn string) (TopicJSON, error) {
	t := TopicJSON{Name: arn[strings.LastIndexByte(arn, ':')+1:], ARN: arn, Subscriptions: []SubscriptionJSON{}}
	for next := ""; ; {
		subs, token, err := s.sns.ListSubscriptionsByTopic(ctx, c, arn, next)
		if err != nil {
			return t, err
		}
		for _, sub := range subs {
			if sub.SubscriptionARN == pendingARN {
				t.Subscriptions = append(t.Subscriptions, SubscriptionJSON{ARN: sub.SubscriptionARN, Protocol: sub.Protocol, Endpoint: sub.Endpoint, Pending: true})
				continue
			}
			attrs, err := s.sns.GetSubscriptionAttributes(ctx, c, sub.SubscriptionARN)
			if err != nil {
				continue // unsubscribed meanwhile
			}
			t.Subscriptions = append(t.Subscriptions, SubscriptionJSON{ARN: sub.SubscriptionARN, Protocol: sub.Protocol,
				Endpoint: sub.Endpoint, Queue: queueOfARN(sub.Protocol, sub.Endpoint), Raw: attrs["RawMessageDelivery"] == "true",
				FilterPolicy: attrs["FilterPolicy"], Pending: attrs["PendingConfirmation"] == "true",
				QueuePolicy: s.sns.QueuePolicyNote(ctx, c, sub.SubscriptionARN)})
		}
		if next = token; next == "" {
			return t, nil
		}
	}
}

// pendingARN is the ARN ListSubscriptionsByTopic gives a subscription
// waiting for its confirmation, as AWS's does.
const pendingARN = "PendingConfirmation"

// queueOfARN is the queue name of an sqs subscription's endpoint, else "".
func queueOfARN(protocol, endpoint string) string {
	if protocol != "sqs" {
		return ""
	}
	ref, ok := engine.QueueRefOfARN(endpoint)
	if !ok {
		return ""
	}
	return ref.Name
}

func publishJSON(p sns.PublishRecord) PublishJSON {
	out := PublishJSON{MessageID: p.MessageID, Topic: p.Topic, At: p.At.UTC(), Subject: p.Subject, Error: p.Err,
		Delivered: p.Delivered, Filtered: p.Filtered, Failed: p.Failed, Copies: p.Copies, Outcomes: make([]OutcomeJSON, 0, len(p.Outcomes))}
	for _, o := range p.Outcomes {
		out.Outcomes = append(out.Outcomes, OutcomeJSON{Subscription: o.Subscription, Endpoint: o.Endpoint,
			Queue: queueOfARN(o.Protocol, o.Endpoint), Outcome: string(o.Kind), Policy: o.Policy, Reason: o.Reason, Warning: o.Warning})
	}
	return out
}
