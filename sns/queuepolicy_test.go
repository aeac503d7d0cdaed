package sns_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
)

// TestQueuePolicyWarningRateLimited: warn mode logs a subscription's
// warning once every ten minutes, and the next line says how many it left
// out; each publish's record still carries the warning.
func TestQueuePolicyWarningRateLimited(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	eng, err := engine.New(engine.Config{Store: st, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	logs := &logbuf.Buffer{}
	svc := sns.ForStore(eng, st, slog.New(slog.NewTextHandler(logs, nil)))
	t.Cleanup(svc.Close)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	if _, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Account: c.Account, Name: "q"}); err != nil {
		t.Fatal(err)
	}
	topic, err := svc.CreateTopic(ctx, c, sns.CreateTopicParams{Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "sqs", Endpoint: "arn:aws:sqs:us-east-1:000000000000:q"}); err != nil {
		t.Fatal(err)
	}
	publish := func() {
		t.Helper()
		if _, err := svc.Publish(ctx, c, sns.PublishParams{TopicARN: topic, Message: "m"}); err != nil {
			t.Fatal(err)
		}
		if r := svc.RecentPublishes(c.Account, "")[0]; r.Delivered != 1 || !strings.HasPrefix(r.Outcomes[0].Warning, "AWS would not deliver this copy") {
			t.Errorf("record = %+v, want delivered with the warning", r)
		}
	}
	const line = "sns: a copy was delivered that AWS would not deliver"
	for range 3 {
		publish()
	}
	if got := strings.Count(logs.String(), line); got != 1 {
		t.Errorf("after 3 publishes within a minute: %d warning lines, want 1", got)
	}
	fake.Advance(10 * time.Minute)
	publish()
	if got := strings.Count(logs.String(), line); got != 2 || strings.Count(logs.String(), "same_warnings_not_logged=2") != 1 {
		t.Errorf("ten minutes on: %d warning lines (want 2), the second saying 2 were left out:\n%s", got, logs.String())
	}
}

// TestQueuePolicyWarningOnlyForDeliveredCopies: warn mode's line says a
// copy was delivered that AWS would not deliver; a copy the queue then
// refuses (here a message longer than its MaximumMessageSize) was not
// delivered, and gets the line saying it was dropped, not that one.
func TestQueuePolicyWarningOnlyForDeliveredCopies(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	eng, err := engine.New(engine.Config{Store: st, Clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	logs := &logbuf.Buffer{}
	svc := sns.ForStore(eng, st, slog.New(slog.NewTextHandler(logs, nil)))
	t.Cleanup(svc.Close)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	if _, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Account: c.Account, Name: "small",
		Attributes: map[string]string{"MaximumMessageSize": "1024"}}); err != nil {
		t.Fatal(err)
	}
	topic, err := svc.CreateTopic(ctx, c, sns.CreateTopicParams{Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "sqs", Endpoint: "arn:aws:sqs:us-east-1:000000000000:small",
		Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Publish(ctx, c, sns.PublishParams{TopicARN: topic, Message: strings.Repeat("x", 2000)}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "sns: a copy was delivered that AWS would not deliver"); n != 0 {
		t.Errorf("a copy the queue refused is logged as delivered:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "the copy is dropped"); n != 1 {
		t.Errorf("%d lines saying the copy was dropped, want 1:\n%s", n, logs.String())
	}
	if _, err := svc.Publish(ctx, c, sns.PublishParams{TopicARN: topic, Message: "small"}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "sns: a copy was delivered that AWS would not deliver"); n != 1 {
		t.Errorf("a delivered copy AWS would not deliver: %d warning lines, want 1:\n%s", n, logs.String())
	}
}
