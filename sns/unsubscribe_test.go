package sns_test

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
)

// tokens keeps the tokens the service logs for the email subscriptions
// it cannot send a confirmation to.
type tokens struct {
	mu  sync.Mutex
	all []string
}

func (t *tokens) Enabled(context.Context, slog.Level) bool { return true }
func (t *tokens) WithAttrs([]slog.Attr) slog.Handler       { return t }
func (t *tokens) WithGroup(string) slog.Handler            { return t }
func (t *tokens) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "token" {
			t.mu.Lock()
			t.all = append(t.all, a.Value.String())
			t.mu.Unlock()
		}
		return true
	})
	return nil
}

func (t *tokens) last(tb testing.TB) string {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.all) == 0 {
		tb.Fatal("no token logged")
	}
	return t.all[len(t.all)-1]
}

// newTopicService is a Service over a new memstore on a fake clock, with a
// topic; it returns the service, the clock, the topic's ARN and the
// tokens it logs.
func newTopicService(t *testing.T) (*sns.Service, *clock.Fake, string, *tokens) {
	t.Helper()
	st := memstore.New()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	eng, err := engine.New(engine.Config{Store: st, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	toks := &tokens{}
	svc := sns.ForStore(eng, st, slog.New(toks))
	t.Cleanup(func() { svc.Close(); eng.Close() })
	topic, err := svc.CreateTopic(context.Background(), sns.Caller{Account: "000000000000"}, sns.CreateTopicParams{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return svc, clk, topic, toks
}

// TestPendingDeadlineBeforeItsJob: past its 48 hours a pending
// subscription does not confirm, even with a token sent again since and
// before its expiry job has run (the workers are stopped here), and
// subscribing its endpoint again makes a new subscription.
func TestPendingDeadlineBeforeItsJob(t *testing.T) {
	t.Parallel()
	svc, clk, topic, toks := newTopicService(t)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	sub := sns.SubscribeParams{TopicARN: topic, Protocol: "email", Endpoint: "ops@example.com", ReturnSubscriptionARN: true}
	first, err := svc.Subscribe(ctx, c, sub)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(47 * time.Hour)
	if again, err := svc.Subscribe(ctx, c, sub); err != nil || again != first {
		t.Fatalf("Subscribe again while pending: %q %v, want %q", again, err, first)
	}
	fresh := toks.last(t) // good for two more days
	svc.Close()           // no expiry job runs from here
	clk.Advance(time.Hour)

	_, err = svc.ConfirmSubscription(ctx, c, sns.ConfirmParams{TopicARN: topic, Token: fresh})
	if e := baton.AsError(err); e == nil || e.Code != baton.ErrSNSInvalidParameter || e.Message != "Invalid parameter: Token" {
		t.Errorf("ConfirmSubscription past the deadline: %v, want Invalid parameter: Token", err)
	}
	list, _, err := svc.ListSubscriptionsByTopic(ctx, c, topic, "")
	if err != nil || len(list) != 1 {
		t.Fatalf("listed %v %v", list, err)
	}
}

// TestExportLeavesOutConfirmation: an export carries a subscription's
// settable attributes only, not what Baton records of its confirmation
// (ConfirmationWasAuthenticated, AuthenticateOnUnsubscribe), so that an
// import, which subscribes with them, takes it.
func TestExportLeavesOutConfirmation(t *testing.T) {
	t.Parallel()
	svc, _, topic, toks := newTopicService(t)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	if _, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "email-json", Endpoint: "ops@example.com",
		Attributes: map[string]string{"FilterPolicy": `{"kind":["a"]}`}}); err != nil {
		t.Fatal(err)
	}
	arn, err := svc.ConfirmSubscription(ctx, c, sns.ConfirmParams{TopicARN: topic, Token: toks.last(t),
		AuthenticateOnUnsubscribe: "true", Authenticated: true})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := svc.GetSubscriptionAttributes(ctx, c, arn)
	if err != nil || attrs["ConfirmationWasAuthenticated"] != "true" {
		t.Fatalf("attributes %v %v", attrs, err)
	}
	if _, ok := attrs["AuthenticateOnUnsubscribe"]; ok {
		t.Errorf("GetSubscriptionAttributes shows Baton's AuthenticateOnUnsubscribe: %v", attrs)
	}
	ts, err := svc.ExportTopics(ctx, c.Account, "")
	if err != nil || len(ts) != 1 || len(ts[0].Subscriptions) != 1 {
		t.Fatalf("export %v %v", ts, err)
	}
	if got, want := ts[0].Subscriptions[0].Attributes, map[string]string{"FilterPolicy": `{"kind":["a"]}`}; !maps.Equal(got, want) {
		t.Errorf("exported attributes %v, want %v", got, want)
	}
	other, _, _, _ := newTopicService(t)
	if _, err := other.Reset(ctx, c.Account, ""); err != nil {
		t.Fatal(err)
	}
	if err := other.ImportTopics(ctx, c.Account, ts); err != nil {
		t.Errorf("import of the export: %v", err)
	}
}
