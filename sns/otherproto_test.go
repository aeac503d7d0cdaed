package sns_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
)

// logBuffer is a log the test reads back, one JSON record a line.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// records returns the records whose message contains msg.
func (l *logBuffer) records(tb testing.TB, msg string) []map[string]any {
	tb.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			tb.Fatalf("log line %q: %v", line, err)
		}
		if m, _ := r["msg"].(string); strings.Contains(m, msg) {
			out = append(out, r)
		}
	}
	return out
}

func newLoggedService(tb testing.TB) (*sns.Service, *logBuffer) {
	tb.Helper()
	st := memstore.New()
	eng, err := engine.New(engine.Config{Store: st, Clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { eng.Close() })
	logs := &logBuffer{}
	return sns.ForStore(eng, st, slog.New(slog.NewJSONHandler(logs, nil))), logs
}

// TestEmailSubscriptionConfirmedByLoggedToken: Baton sends no email, so
// an email subscription's confirmation token is logged, and
// ConfirmSubscription with it confirms the subscription as AWS's does;
// its creation is logged once as delivered nothing.
func TestEmailSubscriptionConfirmedByLoggedToken(t *testing.T) {
	t.Parallel()
	svc, logs := newLoggedService(t)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	topic, err := svc.CreateTopic(ctx, c, sns.CreateTopicParams{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	arn, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "email", Endpoint: "a@example.com",
		ReturnSubscriptionARN: true, BaseURL: "http://baton"})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if n := len(logs.records(t, "subscription of protocol email is stored and listed; Baton delivers nothing to it and records what AWS would send (GET /admin/api/sns/deliveries)")); n != 1 {
		t.Errorf("%d records say the subscription gets nothing, want 1", n)
	}
	conf := logs.records(t, "Baton sends no email confirmation")
	if len(conf) != 1 {
		t.Fatalf("%d confirmation records, want 1", len(conf))
	}
	token, _ := conf[0]["token"].(string)
	if url, _ := conf[0]["subscribe_url"].(string); !strings.HasPrefix(url, "http://baton/?Action=ConfirmSubscription&TopicArn="+topic+"&Token="+token) || token == "" {
		t.Errorf("logged token %q, SubscribeURL %q", token, url)
	}
	got, err := svc.ConfirmSubscription(ctx, c, sns.ConfirmParams{TopicARN: topic, Token: token, Authenticated: true})
	if err != nil || got != arn {
		t.Fatalf("ConfirmSubscription = %q, %v; want %q", got, err, arn)
	}
	attrs, err := svc.GetSubscriptionAttributes(ctx, c, arn)
	if err != nil || attrs["PendingConfirmation"] != "false" {
		t.Errorf("after confirmation: PendingConfirmation %q, %v", attrs["PendingConfirmation"], err)
	}
}

// TestSkippedCopyRecorded: a publish notes the copy it does not send to a
// confirmed subscription Baton delivers nothing to as recorded, and
// records it.
func TestSkippedCopyRecorded(t *testing.T) {
	t.Parallel()
	svc, _ := newLoggedService(t)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	topic, err := svc.CreateTopic(ctx, c, sns.CreateTopicParams{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	arn, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "sms", Endpoint: "+15555550100"})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if _, err := svc.Publish(ctx, c, sns.PublishParams{TopicARN: topic, Message: "hi"}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	recs := svc.RecentPublishes("", topic)
	if len(recs) != 1 || len(recs[0].Outcomes) != 1 {
		t.Fatalf("records %+v, want one with one outcome", recs)
	}
	if o := recs[0].Outcomes[0]; o.Kind != sns.CopyRecorded || o.Subscription != arn ||
		o.Reason != "Baton delivers nothing to sms subscriptions; what AWS would send is recorded" {
		t.Errorf("outcome %+v", o)
	}
	if got := svc.Deliveries(sns.DeliveryFilter{}).Records; len(got) != 1 || got[0].SubscriptionARN != arn || got[0].Payload != "hi" {
		t.Errorf("recorded %+v, want the one copy for %s", got, arn)
	}
	if r := recs[0]; r.Delivered+r.Filtered+r.Failed != 0 || r.Copies != 1 {
		t.Errorf("counted %d delivered, %d filtered, %d failed of %d copies; want none of 1", r.Delivered, r.Filtered, r.Failed, r.Copies)
	}
}
