package sns_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
)

// countingStore is a memory store that counts the reads a publish makes of
// the topics, subscriptions and queues of accounts (not Baton's own
// internal queues, which the HTTP/S deliveries read as they start).
type countingStore struct {
	*memstore.Store
	reads atomic.Int64
}

func (s *countingStore) count(account string) {
	if account != engine.InternalAccount {
		s.reads.Add(1)
	}
}

func (s *countingStore) QueueGet(ctx context.Context, region, account, name string) (*baton.Queue, error) {
	s.count(account)
	return s.Store.QueueGet(ctx, region, account, name)
}

func (s *countingStore) TopicGet(ctx context.Context, region, account, name string) (*baton.Topic, error) {
	s.count(account)
	return s.Store.TopicGet(ctx, region, account, name)
}

func (s *countingStore) SubscriptionList(ctx context.Context, p baton.SubscriptionListParams) ([]*baton.Subscription, error) {
	s.count(p.Account)
	return s.Store.SubscriptionList(ctx, p)
}

// countedService is a Service in mode over a counting memory store, with a
// topic "orders".
func countedService(t *testing.T, mode sns.QueuePolicyMode) (*sns.Service, *engine.Engine, *countingStore, string) {
	t.Helper()
	st := &countingStore{Store: memstore.New()}
	eng, err := engine.New(engine.Config{Store: st, Clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	svc := sns.ForStore(eng, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(svc.Close)
	svc.SetQueuePolicyMode(mode)
	topic, err := svc.CreateTopic(context.Background(), sns.Caller{Account: "000000000000"}, sns.CreateTopicParams{Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	return svc, eng, st, topic
}

// TestPublishReadsEachQueueOnce: a publish reads its topic, its
// subscriptions and each subscribed queue once, in every queue policy
// mode: the Policy is checked on the queue the send then uses.
func TestPublishReadsEachQueueOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []sns.QueuePolicyMode{sns.QueuePoliciesWarn, sns.QueuePoliciesEnforce, sns.QueuePoliciesOff} {
		svc, eng, st, topic := countedService(t, mode)
		c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
		const queues = 3
		for i := range queues {
			arn := fmt.Sprintf("arn:aws:sqs:us-east-1:000000000000:q%d", i)
			if _, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Account: c.Account, Name: fmt.Sprintf("q%d", i),
				Attributes: map[string]string{"Policy": allowTopicPolicy(arn, topic)}}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "sqs", Endpoint: arn}); err != nil {
				t.Fatal(err)
			}
		}
		st.reads.Store(0)
		if _, err := svc.Publish(ctx, c, sns.PublishParams{TopicARN: topic, Message: "m"}); err != nil {
			t.Fatal(err)
		}
		if got, want := st.reads.Load(), int64(2+queues); got != want {
			t.Errorf("mode %s: a publish to %d queues read the store %d times, want %d (the topic, its subscriptions, each queue once)", mode, queues, got, want)
		}
		if r := svc.RecentPublishes(c.Account, "")[0]; r.Delivered != queues {
			t.Errorf("mode %s: %+v, want %d copies delivered", mode, r, queues)
		}
	}
}

// TestDeadLetterReadOnce: a copy the queue's Policy refuses (enforce) goes
// to the subscription's dead-letter queue, which is read once too, for its
// own Policy and the send.
func TestDeadLetterReadOnce(t *testing.T) {
	t.Parallel()
	svc, eng, st, topic := countedService(t, sns.QueuePoliciesEnforce)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	const dlq = "arn:aws:sqs:us-east-1:000000000000:dlq"
	if _, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Account: c.Account, Name: "q"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Account: c.Account, Name: "dlq",
		Attributes: map[string]string{"Policy": allowTopicPolicy(dlq, topic)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "sqs", Endpoint: "arn:aws:sqs:us-east-1:000000000000:q",
		Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlq + `"}`}}); err != nil {
		t.Fatal(err)
	}
	st.reads.Store(0)
	if _, err := svc.Publish(ctx, c, sns.PublishParams{TopicARN: topic, Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if got := st.reads.Load(); got != 4 {
		t.Errorf("a publish refused by its queue's Policy read the store %d times, want 4 (the topic, its subscriptions, the queue, the dead-letter queue)", got)
	}
	attrs, err := eng.GetQueueAttributes(ctx, engine.QueueRef{Account: c.Account, Name: "dlq"}, []string{"ApproximateNumberOfMessages"})
	if err != nil || attrs["ApproximateNumberOfMessages"] != "1" {
		t.Errorf("the dead-letter queue: %v %v, want 1 message", attrs, err)
	}
}
