package baton

import (
	"context"
	"time"
)

// Topic is one Amazon SNS topic. Its identity on the wire is (region,
// account, name), as a queue's is; its ARN is
// arn:aws:sns:<region>:<account>:<name>. The store keeps every field as
// given: validation, defaults and the rendering of attributes live in
// package sns.
type Topic struct {
	Region  string
	Account string
	Name    string
	// Attributes are the attributes set on the topic (CreateTopic,
	// SetTopicAttributes), by their AWS names, as the client gave them
	// once accepted; the read-only ones (TopicArn, Owner, counts) are not
	// stored.
	Attributes map[string]string
	Tags       map[string]string
	CreatedAt  time.Time
}

// Subscription is one subscription of a topic. It is named by its topic
// (region, account, topic name) and ID, the UUID that ends its ARN
// (<topic ARN>:<ID>).
type Subscription struct {
	Region  string
	Account string
	Topic   string
	ID      string
	// Protocol and Endpoint are as subscribed (sqs and a queue ARN, …).
	Protocol string
	Endpoint string
	// Owner is the account that subscribed; Principal the ARN of the
	// caller who did (SubscriptionPrincipal).
	Owner     string
	Principal string
	// Pending is true until the subscription is confirmed.
	Pending bool
	// Attributes are the settable attributes (RawMessageDelivery,
	// FilterPolicy, …) as accepted, by their AWS names.
	Attributes map[string]string
	CreatedAt  time.Time
}

// TopicStore persists SNS topics and their subscriptions. Like Store it
// holds no semantics: package sns validates and decides, the store keeps
// and selects. A store offers it beside Store (memstore, pebblestore); the
// server serves SNS only over a store that does. Every write is as durable
// as the store's messages when it returns. store/storetest.RunTopics is its
// conformance suite.
type TopicStore interface {
	// TopicCreate stores a new topic. It returns ErrExists if a topic of
	// its region, account and name exists.
	TopicCreate(ctx context.Context, t *Topic) error
	// TopicGet returns the topic or ErrNotFound.
	TopicGet(ctx context.Context, region, account, name string) (*Topic, error)
	// TopicList returns topics of one region and account in name order.
	TopicList(ctx context.Context, p TopicListParams) ([]*Topic, error)
	// TopicUpdate replaces a topic's Attributes and Tags with t's;
	// ErrNotFound if it does not exist.
	TopicUpdate(ctx context.Context, t *Topic) error
	// TopicDelete removes a topic and all its subscriptions, at once;
	// ErrNotFound if it does not exist.
	TopicDelete(ctx context.Context, region, account, name string) error

	// SubscriptionCreate stores a new subscription of an existing topic.
	// It returns ErrNotFound if the topic does not exist and ErrExists if
	// the topic has a subscription of that ID, or of that Protocol and
	// Endpoint: a topic subscribes an endpoint once, even when several
	// servers subscribe it at the same time.
	SubscriptionCreate(ctx context.Context, s *Subscription) error
	// SubscriptionGet returns the subscription or ErrNotFound.
	SubscriptionGet(ctx context.Context, region, account, topic, id string) (*Subscription, error)
	// SubscriptionList returns subscriptions in (topic name, ID) order.
	SubscriptionList(ctx context.Context, p SubscriptionListParams) ([]*Subscription, error)
	// SubscriptionUpdate replaces a subscription's Pending and Attributes
	// with s's; ErrNotFound if it does not exist.
	SubscriptionUpdate(ctx context.Context, s *Subscription) error
	// SubscriptionDelete removes a subscription; ErrNotFound if it does
	// not exist.
	SubscriptionDelete(ctx context.Context, region, account, topic, id string) error

	// SigningKey returns the key SNS signs its messages with, opaque to
	// the store: the one it keeps, or if it keeps none the one generate
	// makes, stored first. It calls generate at most once per key it
	// keeps, and every server of a shared store gets the same key, so
	// that a message any of them signed verifies with the certificate
	// every one of them serves.
	SigningKey(ctx context.Context, generate func() ([]byte, error)) ([]byte, error)

	// TopicDedupGet returns the publish of a FIFO topic recorded under key
	// at a time after cutoff, or ErrNotFound.
	TopicDedupGet(ctx context.Context, region, account, topic, key string, cutoff time.Time) (*PublishRecord, error)
	// TopicDedupPut records a publish of a FIFO topic under r.Key, unless
	// a publish recorded under that key at a time after cutoff exists: it
	// then returns that one and ErrExists, and records nothing. It
	// returns ErrNotFound if the topic does not exist. It may forget the
	// records of a time at or before cutoff; a topic's records go with
	// it.
	TopicDedupPut(ctx context.Context, region, account, topic string, r *PublishRecord, cutoff time.Time) (*PublishRecord, error)
	// TopicSequenceNext hands out a FIFO topic's next SequenceNumber: the
	// larger of atLeast and one above the last it handed out for the
	// topic, which it keeps as the last. Every server of a shared store
	// gets its numbers from one count, so that they increase across
	// servers whose clocks differ. It returns ErrNotFound if the topic
	// does not exist; the count goes with the topic. A store no other
	// server shares may keep the count in memory only.
	TopicSequenceNext(ctx context.Context, region, account, topic string, atLeast uint64) (uint64, error)
}

// PublishRecord is a publish of a FIFO topic as a TopicStore remembers it
// for deduplication: what the publish was answered, under its
// deduplication key (package sns makes the key; the store compares it
// byte for byte).
type PublishRecord struct {
	Key            string
	MessageID      string
	SequenceNumber string
	// At is when the publish was accepted.
	At time.Time
}

// TopicListParams select topics for TopicStore.TopicList.
type TopicListParams struct {
	// Region is the topics' region; "" lists every region's, in (region,
	// name) order, for which After must be "".
	Region  string
	Account string
	// After, if set, starts the list after this name.
	After string
	// Limit caps the result; 0 means no cap.
	Limit int
}

// SubscriptionListParams select subscriptions for
// TopicStore.SubscriptionList: those of one region and account, and of one
// topic if Topic is set.
type SubscriptionListParams struct {
	Region  string
	Account string
	Topic   string
	// AfterTopic and AfterID, if AfterTopic is set, start the list after
	// that subscription.
	AfterTopic, AfterID string
	// Limit caps the result; 0 means no cap.
	Limit int
}
