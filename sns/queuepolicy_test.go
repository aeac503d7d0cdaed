package sns_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
)

// TestQueuePolicyWarningRateLimited: warn mode logs a subscription's
// warning once every ten minutes, and a line says how many it left out:
// the next one, or the one the interval's end writes, whichever comes
// first (lograte.Paced); each publish's record still carries the warning.
func TestQueuePolicyWarningRateLimited(t *testing.T) {
	t.Parallel()
	fake, svc, logs, publish := policyWarnings(t)
	const line = "sns: a copy was delivered that AWS would not deliver"
	for range 3 {
		publish()
	}
	if got := strings.Count(logs.String(), line); got != 1 {
		t.Errorf("after 3 publishes within a minute: %d warning lines, want 1", got)
	}
	fake.Advance(10 * time.Minute)
	publish()
	svc.Close() // says any count still due, and waits for its line
	if l := logs.String(); strings.Count(l, line) > 3 || strings.Count(l, "same_warnings_not_logged=2") != 1 {
		t.Errorf("ten minutes on: want one line saying 2 were left out, at most 3 in all:\n%s", l)
	}
}

// TestQueuePolicyWarningBurstCounted: the warnings left out after a
// subscription's line are counted once the ten minutes after it have
// passed, saying since when, with no publish after them. They were
// counted by the next warning alike, which may never come.
func TestQueuePolicyWarningBurstCounted(t *testing.T) {
	t.Parallel()
	fake, _, logs, publish := policyWarnings(t)
	first := fake.Now()
	for range 3 {
		publish()
	}
	poll.For(t, 30*time.Second, func() error { // the count's timer, for the interval's end
		if next, ok := fake.NextDeadline(); !ok || !next.Equal(first.Add(10*time.Minute)) {
			return fmt.Errorf("next timer at %v (pending %v); want the count's, at %v", next, ok, first.Add(10*time.Minute))
		}
		return nil
	})
	fake.Advance(10 * time.Minute)
	const line = "sns: a copy was delivered that AWS would not deliver"
	poll.For(t, 30*time.Second, func() error {
		if l := logs.String(); strings.Count(l, line) != 2 || !strings.Contains(l, "same_warnings_not_logged=2 since="+first.UTC().Format(time.RFC3339)) {
			return fmt.Errorf("ten minutes on: want a second line counting the 2 left out since %v:\n%s", first, l)
		}
		return nil
	})
}

// policyWarnings is a Service in warn mode on a fake clock, logging to
// logs, with a topic whose subscribed queue's Policy does not let it send,
// and publish, which publishes to it and checks the copy was delivered
// with its warning.
func policyWarnings(t *testing.T) (fake *clock.Fake, svc *sns.Service, logs *logbuf.Buffer, publish func()) {
	t.Helper()
	st := memstore.New()
	fake = clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	eng, err := engine.New(engine.Config{Store: st, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	logs = &logbuf.Buffer{}
	svc = sns.ForStore(eng, st, slog.New(slog.NewTextHandler(logs, nil)))
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
	publish = func() {
		t.Helper()
		if _, err := svc.Publish(ctx, c, sns.PublishParams{TopicARN: topic, Message: "m"}); err != nil {
			t.Fatal(err)
		}
		if r := svc.RecentPublishes(c.Account, "")[0]; r.Delivered != 1 || !strings.HasPrefix(r.Outcomes[0].Warning, "AWS would not deliver this copy") {
			t.Errorf("record = %+v, want delivered with the warning", r)
		}
	}
	return fake, svc, logs, publish
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
