package pebblestore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/baton-sqs/baton"
)

// SNS topics and subscriptions are kept in the log as records of their
// own, written whole (JSON: they are few and rarely written), and in the
// index (memstore's topic set), which answers reads. Like queue-level
// changes they are made under qmu and counted in queueWrites (under
// topicsName) until committed, so that no read is answered from a topic a
// crash would undo.
const (
	// kindTopic + region, account, name (length-prefixed): a topic
	// (topicRecord).
	kindTopic = 'S'
	// kindSubscription + region, account, topic, id (length-prefixed): a
	// subscription (subscriptionRecord).
	kindSubscription = 'U'
	// kindSigningKey: SNS's signing key (SigningKey).
	kindSigningKey = 'G'
)

var _ baton.TopicStore = (*Store)(nil)

// namedKey is kind + each part length-prefixed: no key is a prefix of
// another's parts.
func namedKey(kind byte, parts ...string) []byte {
	k := []byte{kind}
	for _, s := range parts {
		k = binary.AppendUvarint(k, uint64(len(s)))
		k = append(k, s...)
	}
	return k
}

// topicRecord is a topic as the log keeps it.
type topicRecord struct {
	Region     string            `json:"r"`
	Account    string            `json:"a"`
	Name       string            `json:"n"`
	Attributes map[string]string `json:"at,omitempty"`
	Tags       map[string]string `json:"t,omitempty"`
	CreatedAt  int64             `json:"c"` // Unix nanoseconds
}

// subscriptionRecord is a subscription as the log keeps it.
type subscriptionRecord struct {
	Region     string            `json:"r"`
	Account    string            `json:"a"`
	Topic      string            `json:"tp"`
	ID         string            `json:"id"`
	Protocol   string            `json:"p"`
	Endpoint   string            `json:"e"`
	Owner      string            `json:"o"`
	Principal  string            `json:"pr"`
	Pending    bool              `json:"pe,omitempty"`
	Attributes map[string]string `json:"at,omitempty"`
	CreatedAt  int64             `json:"c"`
}

// put writes one record.
type put struct{ key, val []byte }

func (c *put) apply(t *txn) error { return t.b.Set(c.key, c.val, nil) }

// drop deletes records.
type drop struct{ keys [][]byte }

func (c *drop) apply(t *txn) error {
	for _, k := range c.keys {
		if err := t.b.Delete(k, nil); err != nil {
			return err
		}
	}
	return nil
}

func topicPut(tp *baton.Topic) (change, error) {
	val, err := json.Marshal(topicRecord{Region: tp.Region, Account: tp.Account, Name: tp.Name, Attributes: tp.Attributes,
		Tags: tp.Tags, CreatedAt: encTime(tp.CreatedAt)})
	if err != nil {
		return nil, fmt.Errorf("pebblestore: encode topic: %w", err)
	}
	return &put{key: namedKey(kindTopic, tp.Region, tp.Account, tp.Name), val: val}, nil
}

func subscriptionPut(sub *baton.Subscription) (change, error) {
	val, err := json.Marshal(subscriptionRecord{Region: sub.Region, Account: sub.Account, Topic: sub.Topic, ID: sub.ID,
		Protocol: sub.Protocol, Endpoint: sub.Endpoint, Owner: sub.Owner, Principal: sub.Principal, Pending: sub.Pending,
		Attributes: sub.Attributes, CreatedAt: encTime(sub.CreatedAt)})
	if err != nil {
		return nil, fmt.Errorf("pebblestore: encode subscription: %w", err)
	}
	return &put{key: namedKey(kindSubscription, sub.Region, sub.Account, sub.Topic, sub.ID), val: val}, nil
}

// topicWrite makes a change of topics: f changes the index and returns the
// change to log, or an error (and no change). It returns once the change,
// or for a refusal every change it may rest on, is committed.
func (s *Store) topicWrite(ctx context.Context, f func() (change, error)) error {
	if err := s.writable(); err != nil {
		return err
	}
	s.qmu.Lock()
	s.queueWrites.add(topicsName)
	c, err := f()
	var cs []change
	if c != nil {
		cs = []change{s.queueWrite(topicsName, c)}
	} else {
		s.queueWrites.done(topicsName)
	}
	b := s.w.enqueue(cs, nil)
	s.qmu.Unlock()
	if werr := b.wait(ctx); werr != nil {
		return werr
	}
	return err
}

// TopicCreate stores the topic and returns once it is committed.
func (s *Store) TopicCreate(ctx context.Context, tp *baton.Topic) error {
	c, err := topicPut(tp)
	if err != nil {
		return err
	}
	return s.topicWrite(ctx, func() (change, error) {
		if err := s.index.TopicCreate(ctx, tp); err != nil {
			return nil, err
		}
		return c, nil
	})
}

// TopicUpdate replaces the topic's attributes and tags and returns once
// the change is committed.
func (s *Store) TopicUpdate(ctx context.Context, tp *baton.Topic) error {
	return s.topicWrite(ctx, func() (change, error) {
		if err := s.index.TopicUpdate(ctx, tp); err != nil {
			return nil, err
		}
		now, err := s.index.TopicGet(ctx, tp.Region, tp.Account, tp.Name)
		if err != nil {
			return nil, err
		}
		return topicPut(now)
	})
}

// TopicDelete deletes the topic and its subscriptions in one change.
func (s *Store) TopicDelete(ctx context.Context, region, account, name string) error {
	return s.topicWrite(ctx, func() (change, error) {
		subs, err := s.index.SubscriptionList(ctx, baton.SubscriptionListParams{Region: region, Account: account, Topic: name})
		if err != nil {
			return nil, err
		}
		if err := s.index.TopicDelete(ctx, region, account, name); err != nil {
			return nil, err
		}
		d := &drop{keys: [][]byte{namedKey(kindTopic, region, account, name)}}
		for _, sub := range subs {
			d.keys = append(d.keys, namedKey(kindSubscription, region, account, name, sub.ID))
		}
		return changes{d, publishRecordsDrop(region, account, name)}, nil
	})
}

// SubscriptionCreate stores the subscription and returns once it is
// committed.
func (s *Store) SubscriptionCreate(ctx context.Context, sub *baton.Subscription) error {
	c, err := subscriptionPut(sub)
	if err != nil {
		return err
	}
	return s.topicWrite(ctx, func() (change, error) {
		if err := s.index.SubscriptionCreate(ctx, sub); err != nil {
			return nil, err
		}
		return c, nil
	})
}

// SubscriptionUpdate replaces the subscription's Pending and Attributes
// and returns once the change is committed.
func (s *Store) SubscriptionUpdate(ctx context.Context, sub *baton.Subscription) error {
	return s.topicWrite(ctx, func() (change, error) {
		if err := s.index.SubscriptionUpdate(ctx, sub); err != nil {
			return nil, err
		}
		now, err := s.index.SubscriptionGet(ctx, sub.Region, sub.Account, sub.Topic, sub.ID)
		if err != nil {
			return nil, err
		}
		return subscriptionPut(now)
	})
}

// SubscriptionDelete deletes the subscription and returns once the
// deletion is committed.
func (s *Store) SubscriptionDelete(ctx context.Context, region, account, topic, id string) error {
	return s.topicWrite(ctx, func() (change, error) {
		if err := s.index.SubscriptionDelete(ctx, region, account, topic, id); err != nil {
			return nil, err
		}
		return &drop{keys: [][]byte{namedKey(kindSubscription, region, account, topic, id)}}, nil
	})
}

// TopicGet answers from memory, once what it saw is committed.
func (s *Store) TopicGet(ctx context.Context, region, account, name string) (*baton.Topic, error) {
	tp, err := s.index.TopicGet(ctx, region, account, name)
	return tp, s.committedOr(ctx, err)
}

// TopicList answers from memory, once what it saw is committed.
func (s *Store) TopicList(ctx context.Context, p baton.TopicListParams) ([]*baton.Topic, error) {
	ts, err := s.index.TopicList(ctx, p)
	return ts, s.committedOr(ctx, err)
}

// SubscriptionGet answers from memory, once what it saw is committed.
func (s *Store) SubscriptionGet(ctx context.Context, region, account, topic, id string) (*baton.Subscription, error) {
	sub, err := s.index.SubscriptionGet(ctx, region, account, topic, id)
	return sub, s.committedOr(ctx, err)
}

// SubscriptionList answers from memory, once what it saw is committed.
func (s *Store) SubscriptionList(ctx context.Context, p baton.SubscriptionListParams) ([]*baton.Subscription, error) {
	subs, err := s.index.SubscriptionList(ctx, p)
	return subs, s.committedOr(ctx, err)
}

// committedOr waits until what a read saw is committed, then returns the
// read's error.
func (s *Store) committedOr(ctx context.Context, err error) error {
	if !s.queueWrites.pending(topicsName) {
		return err
	}
	if werr := s.queuesCommitted(ctx); werr != nil {
		return werr
	}
	return err
}

// SigningKey returns the signing key of the log, generating and
// committing it on first use.
func (s *Store) SigningKey(ctx context.Context, generate func() ([]byte, error)) ([]byte, error) {
	var key []byte
	err := s.topicWrite(ctx, func() (change, error) {
		made := false
		k, err := s.index.SigningKey(ctx, func() ([]byte, error) {
			made = true
			return generate()
		})
		if err != nil || !made {
			key = k
			return nil, err
		}
		key = k
		return &put{key: []byte{kindSigningKey}, val: k}, nil
	})
	if err != nil {
		return nil, err
	}
	return key, nil
}

// loadTopics puts the log's signing key, topics, then their subscriptions, into the
// index.
func (s *Store) loadTopics(ctx context.Context) error {
	lo, hi := span(kindSigningKey)
	err := s.scan(lo, hi, func(_, v []byte) error {
		_, err := s.index.SigningKey(ctx, func() ([]byte, error) { return v, nil })
		return err
	})
	if err != nil {
		return fmt.Errorf("load signing key: %w", err)
	}
	lo, hi = span(kindTopic)
	err = s.scan(lo, hi, func(k, v []byte) error {
		var r topicRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("topic record %q: %w", k, err)
		}
		return s.index.TopicCreate(ctx, &baton.Topic{Region: r.Region, Account: r.Account, Name: r.Name,
			Attributes: r.Attributes, Tags: r.Tags, CreatedAt: decTime(r.CreatedAt)})
	})
	if err != nil {
		return fmt.Errorf("load topics: %w", err)
	}
	lo, hi = span(kindSubscription)
	err = s.scan(lo, hi, func(k, v []byte) error {
		var r subscriptionRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("subscription record %q: %w", k, err)
		}
		err := s.index.SubscriptionCreate(ctx, &baton.Subscription{Region: r.Region, Account: r.Account, Topic: r.Topic, ID: r.ID,
			Protocol: r.Protocol, Endpoint: r.Endpoint, Owner: r.Owner, Principal: r.Principal, Pending: r.Pending,
			Attributes: r.Attributes, CreatedAt: decTime(r.CreatedAt)})
		if errors.Is(err, baton.ErrNotFound) {
			return fmt.Errorf("subscription record %q: its topic is not in the log", k)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("load subscriptions: %w", err)
	}
	return nil
}
