package sns_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
)

// newService is an sns.Service over a fresh memory store, its clock fake.
func newService(t *testing.T) (*sns.Service, *engine.Engine) {
	t.Helper()
	st := memstore.New()
	eng, err := engine.New(engine.Config{Store: st, Clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return sns.ForStore(eng, st, nil), eng
}

// TestPublishOutcomes: each publish is recorded with what became of every
// subscription's copy (delivered, or failed and why) and counted per
// topic; a queue that does not exist is a failed copy, not a lost one.
func TestPublishOutcomes(t *testing.T) {
	t.Parallel()
	svc, eng := newService(t)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	for _, q := range []string{"a", "b"} {
		if _, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Account: c.Account, Name: q}); err != nil {
			t.Fatal(err)
		}
	}
	topic, err := svc.CreateTopic(ctx, c, sns.CreateTopicParams{Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]string{}
	for _, q := range []string{"a", "b", "gone"} {
		arn, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "sqs", Endpoint: "arn:aws:sqs:us-east-1:000000000000:" + q})
		if err != nil {
			t.Fatal(err)
		}
		subs[arn] = q
	}
	res, err := svc.Publish(ctx, c, sns.PublishParams{TopicARN: topic, Message: "hello", Subject: new("greeting")})
	if err != nil {
		t.Fatal(err)
	}
	id := res.MessageID
	recs := svc.RecentPublishes(c.Account, "")
	if len(recs) != 1 {
		t.Fatalf("RecentPublishes: %d records, want 1", len(recs))
	}
	r := recs[0]
	if r.MessageID != id || r.TopicARN != topic || r.Topic != "orders" || r.Subject != "greeting" || r.Err != "" {
		t.Errorf("record = %+v, want message %s of topic %s, subject greeting, no error", r, id, topic)
	}
	if r.Delivered != 2 || r.Failed != 1 || r.Filtered != 0 || len(r.Outcomes) != 3 {
		t.Fatalf("record counts delivered %d failed %d filtered %d with %d outcomes, want 2, 1, 0 and 3", r.Delivered, r.Failed, r.Filtered, len(r.Outcomes))
	}
	for _, o := range r.Outcomes {
		q := subs[o.Subscription]
		want := sns.CopyDelivered
		if q == "gone" {
			want = sns.CopyFailed
			if !strings.Contains(o.Reason, "QueueDoesNotExist") {
				t.Errorf("the missing queue's reason = %q, want it to say QueueDoesNotExist", o.Reason)
			}
		}
		if o.Kind != want || o.Endpoint != "arn:aws:sqs:us-east-1:000000000000:"+q {
			t.Errorf("outcome for queue %s = %+v, want %s", q, o, want)
		}
	}
	counts := svc.TopicCounts("")
	if len(counts) != 1 || counts[0] != (sns.TopicCounts{Region: "us-east-1", Account: c.Account, Topic: "orders", Publishes: 1, Delivered: 2, Failed: 1}) {
		t.Errorf("TopicCounts = %+v, want orders: 1 publish, 2 delivered, 1 failed", counts)
	}
	if got := svc.RecentPublishes("111111111111", ""); len(got) != 0 {
		t.Errorf("another account sees %d publishes, want none", len(got))
	}
}

// TestRecentPublishesBounded: the log keeps the newest 200 publishes,
// newest first, and a topic filter selects one topic's.
func TestRecentPublishesBounded(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	a, _ := svc.CreateTopic(ctx, c, sns.CreateTopicParams{Name: "a"})
	b, _ := svc.CreateTopic(ctx, c, sns.CreateTopicParams{Name: "b"})
	var last string
	for i := range 205 {
		topic := a
		if i%5 == 0 {
			topic = b
		}
		res, err := svc.Publish(ctx, c, sns.PublishParams{TopicARN: topic, Message: "m"})
		if err != nil {
			t.Fatal(err)
		}
		last = res.MessageID
	}
	all := svc.RecentPublishes("", "")
	if len(all) != 200 || all[0].MessageID != last {
		t.Fatalf("RecentPublishes: %d records, newest %s; want 200, newest %s", len(all), all[0].MessageID, last)
	}
	if got := svc.RecentPublishes("", b); len(got) != 40 {
		t.Errorf("topic b: %d records, want the 40 of the last 200", len(got))
	}
	counts := svc.TopicCounts(c.Account)
	if len(counts) != 2 || counts[0].Publishes != 164 || counts[1].Publishes != 41 {
		t.Errorf("TopicCounts = %+v, want a 164 and b 41 publishes", counts)
	}
}

// TestFilteredOutcome: a subscription a filter policy left out is recorded
// as filtered, with the policy, and counted per topic.
func TestFilteredOutcome(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t)
	topic := sns.TopicARN("us-east-1", "000000000000", "orders")
	sub := &baton.Subscription{Region: "us-east-1", Account: "000000000000", Topic: "orders", ID: "s1", Protocol: "sqs",
		Endpoint: "arn:aws:sqs:us-east-1:000000000000:audit"}
	sns.RecordFiltered(svc, topic, "m1", []*baton.Subscription{sub}, `{"kind":["refund"]}`)
	r := svc.RecentPublishes("", "")
	if len(r) != 1 || r[0].Filtered != 1 || len(r[0].Outcomes) != 1 {
		t.Fatalf("RecentPublishes = %+v, want one publish with one filtered copy", r)
	}
	if o := r[0].Outcomes[0]; o.Kind != sns.CopyFiltered || o.Policy != `{"kind":["refund"]}` || o.Subscription != topic+":s1" {
		t.Errorf("outcome = %+v, want filtered by the policy", o)
	}
	if c := svc.TopicCounts(""); len(c) != 1 || c[0].Filtered != 1 || c[0].Publishes != 1 {
		t.Errorf("TopicCounts = %+v, want 1 publish, 1 filtered", c)
	}
}
