package memstore

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/baton-sqs/baton"
)

// topicSet holds the SNS topics and subscriptions of a Store, apart from
// its queues and under a lock of its own: no call holds it with another.
type topicSet struct {
	mu     sync.RWMutex
	topics map[queueKey]*baton.Topic
	// subs are each topic's subscriptions by ID.
	subs map[queueKey]map[string]*baton.Subscription
	// signingKey is SigningKey's, nil until made.
	signingKey []byte
	// dedup are the FIFO topics' publish records (dedup.go).
	dedup map[queueKey]*dedupRecords
	// sequences are the FIFO topics' last SequenceNumbers (sequence.go).
	sequences map[queueKey]uint64
}

var _ baton.TopicStore = (*Store)(nil)

// TopicCreate stores a copy of t.
func (s *Store) TopicCreate(_ context.Context, t *baton.Topic) error {
	ts := &s.topics
	ts.mu.Lock()
	defer ts.mu.Unlock()
	k := queueKey{t.Region, t.Account, t.Name}
	if _, ok := ts.topics[k]; ok {
		return baton.ErrExists
	}
	if ts.topics == nil {
		ts.topics = make(map[queueKey]*baton.Topic)
		ts.subs = make(map[queueKey]map[string]*baton.Subscription)
	}
	ts.topics[k] = cloneTopic(t)
	return nil
}

// TopicGet returns a copy of the topic.
func (s *Store) TopicGet(_ context.Context, region, account, name string) (*baton.Topic, error) {
	ts := &s.topics
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	t, ok := ts.topics[queueKey{region, account, name}]
	if !ok {
		return nil, baton.ErrNotFound
	}
	return cloneTopic(t), nil
}

// TopicList returns copies of the selected topics in name order.
func (s *Store) TopicList(_ context.Context, p baton.TopicListParams) ([]*baton.Topic, error) {
	ts := &s.topics
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	var out []*baton.Topic
	for k, t := range ts.topics {
		if (p.Region == "" || k.region == p.Region) && k.account == p.Account && k.name > p.After {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *baton.Topic) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Name, b.Name))
	})
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	for i, t := range out {
		out[i] = cloneTopic(t)
	}
	return out, nil
}

// TopicUpdate replaces the topic's attributes and tags.
func (s *Store) TopicUpdate(_ context.Context, t *baton.Topic) error {
	ts := &s.topics
	ts.mu.Lock()
	defer ts.mu.Unlock()
	old, ok := ts.topics[queueKey{t.Region, t.Account, t.Name}]
	if !ok {
		return baton.ErrNotFound
	}
	old.Attributes, old.Tags = maps.Clone(t.Attributes), maps.Clone(t.Tags)
	return nil
}

// TopicDelete removes the topic and its subscriptions.
func (s *Store) TopicDelete(_ context.Context, region, account, name string) error {
	ts := &s.topics
	ts.mu.Lock()
	defer ts.mu.Unlock()
	k := queueKey{region, account, name}
	if _, ok := ts.topics[k]; !ok {
		return baton.ErrNotFound
	}
	delete(ts.topics, k)
	delete(ts.subs, k)
	delete(ts.dedup, k)
	delete(ts.sequences, k)
	return nil
}

// SubscriptionCreate stores a copy of sub.
func (s *Store) SubscriptionCreate(_ context.Context, sub *baton.Subscription) error {
	ts := &s.topics
	ts.mu.Lock()
	defer ts.mu.Unlock()
	k := queueKey{sub.Region, sub.Account, sub.Topic}
	if _, ok := ts.topics[k]; !ok {
		return baton.ErrNotFound
	}
	for id, old := range ts.subs[k] {
		if id == sub.ID || old.Protocol == sub.Protocol && old.Endpoint == sub.Endpoint {
			return baton.ErrExists
		}
	}
	if ts.subs[k] == nil {
		ts.subs[k] = make(map[string]*baton.Subscription)
	}
	ts.subs[k][sub.ID] = cloneSubscription(sub)
	return nil
}

// SubscriptionGet returns a copy of the subscription.
func (s *Store) SubscriptionGet(_ context.Context, region, account, topic, id string) (*baton.Subscription, error) {
	ts := &s.topics
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	sub, ok := ts.subs[queueKey{region, account, topic}][id]
	if !ok {
		return nil, baton.ErrNotFound
	}
	return cloneSubscription(sub), nil
}

// SubscriptionList returns copies of the selected subscriptions in (topic,
// ID) order.
func (s *Store) SubscriptionList(_ context.Context, p baton.SubscriptionListParams) ([]*baton.Subscription, error) {
	ts := &s.topics
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	var out []*baton.Subscription
	for k, subs := range ts.subs {
		if k.region != p.Region || k.account != p.Account || p.Topic != "" && k.name != p.Topic {
			continue
		}
		for _, sub := range subs {
			if p.AfterTopic == "" || CompareSubscriptions(sub, p.AfterTopic, p.AfterID) > 0 {
				out = append(out, sub)
			}
		}
	}
	slices.SortFunc(out, func(a, b *baton.Subscription) int { return CompareSubscriptions(a, b.Topic, b.ID) })
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	for i, sub := range out {
		out[i] = cloneSubscription(sub)
	}
	return out, nil
}

// CompareSubscriptions orders sub against the subscription (topic, id) as
// TopicStore.SubscriptionList orders them.
func CompareSubscriptions(sub *baton.Subscription, topic, id string) int {
	return cmp.Or(cmp.Compare(sub.Topic, topic), cmp.Compare(sub.ID, id))
}

// SubscriptionUpdate replaces the subscription's Pending and Attributes.
func (s *Store) SubscriptionUpdate(_ context.Context, sub *baton.Subscription) error {
	ts := &s.topics
	ts.mu.Lock()
	defer ts.mu.Unlock()
	old, ok := ts.subs[queueKey{sub.Region, sub.Account, sub.Topic}][sub.ID]
	if !ok {
		return baton.ErrNotFound
	}
	old.Pending, old.Attributes = sub.Pending, maps.Clone(sub.Attributes)
	return nil
}

// SubscriptionDelete removes the subscription.
func (s *Store) SubscriptionDelete(_ context.Context, region, account, topic, id string) error {
	ts := &s.topics
	ts.mu.Lock()
	defer ts.mu.Unlock()
	subs := ts.subs[queueKey{region, account, topic}]
	if _, ok := subs[id]; !ok {
		return baton.ErrNotFound
	}
	delete(subs, id)
	return nil
}

// SigningKey returns the store's signing key, made by generate on first
// use.
func (s *Store) SigningKey(_ context.Context, generate func() ([]byte, error)) ([]byte, error) {
	ts := &s.topics
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.signingKey == nil {
		key, err := generate()
		if err != nil {
			return nil, err
		}
		ts.signingKey = slices.Clone(key)
	}
	return slices.Clone(ts.signingKey), nil
}

func cloneTopic(t *baton.Topic) *baton.Topic {
	c := *t
	c.Attributes, c.Tags = maps.Clone(t.Attributes), maps.Clone(t.Tags)
	return &c
}

func cloneSubscription(s *baton.Subscription) *baton.Subscription {
	c := *s
	c.Attributes = maps.Clone(s.Attributes)
	return &c
}
