package sns

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-sqs/baton"
)

// The test-state controls of topics (the admin API's reset, export and
// import build on these, beside the engine's for queues).

// TopicState is a topic as an export carries it: its settable attributes,
// tags and subscriptions.
type TopicState struct {
	Region        string
	Name          string
	Attributes    map[string]string
	Tags          map[string]string
	Subscriptions []SubscriptionState
}

// SubscriptionState is one subscription of an exported topic.
type SubscriptionState struct {
	Protocol   string
	Endpoint   string
	Attributes map[string]string
}

// ErrStateTopicExists is wrapped by ImportTopics' refusal of a topic that
// exists.
var ErrStateTopicExists = errors.New("topic already exists")

// Reset deletes every topic of the account in region (every region when
// region is empty), with its subscriptions, and returns how many. It
// forgets the account's recorded deliveries of that region too
// (record.go), which a test suite's reset means to start afresh.
func (s *Service) Reset(ctx context.Context, account, region string) (int, error) {
	s.ClearDeliveries(DeliveryFilter{Account: account, Region: region})
	ts, err := s.store.TopicList(ctx, baton.TopicListParams{Region: region, Account: account})
	if err != nil {
		return 0, storeErr(err, "list topics")
	}
	n := 0
	for _, t := range ts {
		err := s.store.TopicDelete(ctx, t.Region, t.Account, t.Name)
		if err != nil && !errors.Is(err, baton.ErrNotFound) { // one deleted meanwhile is as good
			return n, storeErr(err, "delete topic")
		}
		n++
	}
	return n, nil
}

// ExportTopics returns the account's topics of region (every region when
// region is empty) with their subscriptions, changing nothing.
func (s *Service) ExportTopics(ctx context.Context, account, region string) ([]TopicState, error) {
	ts, err := s.store.TopicList(ctx, baton.TopicListParams{Region: region, Account: account})
	if err != nil {
		return nil, storeErr(err, "list topics")
	}
	out := make([]TopicState, 0, len(ts))
	for _, t := range ts {
		subs, err := s.store.SubscriptionList(ctx, baton.SubscriptionListParams{Region: t.Region, Account: t.Account, Topic: t.Name})
		if err != nil {
			return nil, storeErr(err, "list subscriptions")
		}
		st := TopicState{Region: t.Region, Name: t.Name, Attributes: t.Attributes, Tags: t.Tags, Subscriptions: make([]SubscriptionState, 0, len(subs))}
		for _, sub := range subs {
			st.Subscriptions = append(st.Subscriptions, SubscriptionState{Protocol: sub.Protocol, Endpoint: sub.Endpoint,
				Attributes: settableAttributes(sub.Attributes)})
		}
		out = append(out, st)
	}
	return out, nil
}

// CheckImport refuses, with ErrStateTopicExists, topics of which one
// exists in the account: an import creates them, and must not mix an old
// topic's subscriptions with the file's.
func (s *Service) CheckImport(ctx context.Context, account string, topics []TopicState) error {
	for _, t := range topics {
		_, err := s.store.TopicGet(ctx, s.region(Caller{Region: t.Region}), account, t.Name)
		if err == nil {
			return fmt.Errorf("%w: %s (reset first)", ErrStateTopicExists, t.Name)
		}
		if !errors.Is(err, baton.ErrNotFound) {
			return storeErr(err, "get topic")
		}
	}
	return nil
}

// ImportTopics creates the topics, then their subscriptions, with the
// API's validation (CreateTopic, Subscribe) in the account. Call
// CheckImport first.
func (s *Service) ImportTopics(ctx context.Context, account string, topics []TopicState) error {
	for _, t := range topics {
		c := Caller{Region: t.Region, Account: account}
		p := CreateTopicParams{Name: t.Name, Attributes: t.Attributes}
		for k, v := range t.Tags {
			p.Tags = append(p.Tags, Tag{Key: k, Value: v})
		}
		arn, err := s.CreateTopic(ctx, c, p)
		if err != nil {
			return fmt.Errorf("create topic %s: %w", t.Name, err)
		}
		for _, sub := range t.Subscriptions {
			if _, err := s.Subscribe(ctx, c, SubscribeParams{TopicARN: arn, Protocol: sub.Protocol, Endpoint: sub.Endpoint, Attributes: sub.Attributes}); err != nil {
				return fmt.Errorf("topic %s: subscribe %s: %w", t.Name, sub.Endpoint, err)
			}
		}
	}
	return nil
}
