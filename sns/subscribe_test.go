package sns_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
)

// raceStore is a memstore whose first subscription listing misses the
// subscription another server creates just then: it creates it before
// answering with what it saw before.
type raceStore struct {
	*memstore.Store
	raced bool
}

func (s *raceStore) SubscriptionList(ctx context.Context, p baton.SubscriptionListParams) ([]*baton.Subscription, error) {
	before, err := s.Store.SubscriptionList(ctx, p)
	if err != nil || s.raced {
		return before, err
	}
	s.raced = true
	other := &baton.Subscription{Region: p.Region, Account: p.Account, Topic: p.Topic, ID: "made-elsewhere", Protocol: "sqs",
		Endpoint: "arn:aws:sqs:us-east-1:000000000000:q", Owner: "000000000000"}
	return before, s.Store.SubscriptionCreate(ctx, other)
}

// TestSubscribeRace: a Subscribe whose creation finds the endpoint
// subscribed meanwhile (the store refuses a second subscription of it)
// answers with that subscription, as if it had seen it first.
func TestSubscribeRace(t *testing.T) {
	t.Parallel()
	st := &raceStore{Store: memstore.New()}
	eng, err := engine.New(engine.Config{Store: st, Clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	svc := sns.ForStore(eng, st, nil)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	topic, err := svc.CreateTopic(ctx, c, sns.CreateTopicParams{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	arn, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "sqs", Endpoint: "arn:aws:sqs:us-east-1:000000000000:q"})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if want := topic + ":made-elsewhere"; arn != want {
		t.Errorf("Subscribe = %q, want the subscription made meanwhile, %q", arn, want)
	}
}
