package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/sns"
)

// The dashboard's pages of what SNS recorded, not sent: a topic's page
// and the SMS page are served, say in their HTML that nothing was sent,
// and read views that sum up the records they show.
func TestDashboardRecordPages(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	for path, want := range map[string][]string{
		"/ui/topics/alerts": {`data-page="topic"`, `data-topic="alerts"`, `<h1 class="mono-title">alerts</h1>`, "Baton sent none of these", "Recorded, not sent"},
		"/ui/sms":           {`data-page="sms"`, "SMS to phone numbers", "Baton sent none of these: it sends no SMS", `id="confirm-dialog"`},
		// The name is the page's text, never its markup.
		"/ui/topics/%3Cb%3Ex": {`data-topic="&lt;b&gt;x"`, `<h1 class="mono-title">&lt;b&gt;x</h1>`},
	} {
		code, h, body := fetch(t, http.MethodGet, srv.URL+path, nil, "")
		if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %s", path, code, h.Get("Content-Type"))
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: the page has no %q", path, w)
			}
		}
	}
}

// topicPage reads GET /admin/api/topics/{name}.
func topicPage(t *testing.T, srv *testutil.Server, name string) server.TopicPageJSON {
	t.Helper()
	var v server.TopicPageJSON
	getJSON(t, srv.URL+"/admin/api/topics/"+name, &v)
	return v
}

// The topic view lists its subscriptions, a pending one among them, and
// sums up the topic's records: how many, the newest's number, and the
// record as a whole; a topic that does not exist is NotFound.
func TestDashboardTopicView(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	alerts := mustTopic(t, c, "alerts")
	other := mustTopic(t, c, "other")
	subscribeOther(t, c, alerts, "sms", "+15555550100", nil)
	subscribeOther(t, c, alerts, "email", "ops@example.com", nil)
	subscribeOther(t, c, other, "sms", "+15555550101", nil)
	for _, topic := range []string{alerts, other} {
		if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("disk full")}); err != nil {
			t.Fatal(err)
		}
	}

	v := topicPage(t, srv, "alerts")
	if !v.Served || v.Topic.ARN != alerts || v.Topic.Publishes != 1 || len(v.Topic.Subscriptions) != 2 {
		t.Fatalf("topic view = %+v, want alerts with its 2 subscriptions and 1 publish", v)
	}
	var pending *server.SubscriptionJSON
	for i, s := range v.Topic.Subscriptions {
		if s.Protocol == "email" {
			pending = &v.Topic.Subscriptions[i]
		}
	}
	if pending == nil || !pending.Pending || pending.ARN != "PendingConfirmation" || pending.Endpoint != "ops@example.com" {
		t.Errorf("the pending email subscription is listed as %+v, want pending, ARN PendingConfirmation", pending)
	}
	// The email's confirmation and the SMS: the other topic's is not the
	// page's, but is the record's.
	all := deliveries(t, srv, "topic=alerts")
	if r := v.Record; r.Selected != 2 || r.Last != all.Deliveries[1].Seq || r.Kept != 3 || r.Max != sns.MaxDeliveryRecords ||
		r.MaxBytes != sns.MaxDeliveryBytes || r.Dropped != 0 {
		t.Errorf("record = %+v, want 2 selected, the last seq %d, 3 kept of %d, none dropped", r, all.Deliveries[1].Seq, sns.MaxDeliveryRecords)
	}

	code, _, body := fetch(t, http.MethodGet, srv.URL+"/admin/api/topics/missing", nil, "")
	if code != http.StatusNotFound || !strings.Contains(body, "NotFound") {
		t.Errorf("GET /admin/api/topics/missing: %d %s, want 404 NotFound", code, body)
	}
}

// direct=true selects the publishes to phone numbers alone, for the SMS
// page to read, sum up and clear them, leaving a topic's SMS be; the
// summary counts the records dropped for room.
func TestDashboardPhoneRecord(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustTopic(t, c, "alerts")
	subscribeOther(t, c, topic, "sms", "+15555550100", nil)
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("disk full")}); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"code 1", "code 2"} {
		if _, err := c.Publish(ctx, &awssns.PublishInput{PhoneNumber: aws.String("+15555550199"), Message: aws.String(msg)}); err != nil {
			t.Fatal(err)
		}
	}
	got := deliveries(t, srv, "direct=true")
	if len(got.Deliveries) != 2 || got.Deliveries[0].Payload != "code 1" || got.Deliveries[1].TopicARN != "" {
		t.Fatalf("direct=true: %+v, want the two SMS to +15555550199", got.Deliveries)
	}
	var view server.SNSRecordViewJSON
	getJSON(t, srv.URL+"/admin/api/sns/record?direct=true", &view)
	if !view.Served || view.Record.Selected != 2 || view.Record.Last != got.Deliveries[1].Seq || view.Record.Kept != 3 {
		t.Errorf("record view = %+v, want 2 selected of 3 kept, the last seq %d", view, got.Deliveries[1].Seq)
	}
	code, _, body := fetch(t, http.MethodDelete, srv.URL+"/admin/api/sns/deliveries?direct=true", nil, "")
	var cleared struct{ Cleared int }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &cleared) != nil || cleared.Cleared != 2 {
		t.Errorf("DELETE direct=true: %d %s, want 2 cleared", code, body)
	}
	if left := deliveries(t, srv, ""); len(left.Deliveries) != 1 || left.Deliveries[0].TopicARN != topic {
		t.Errorf("after clearing the SMS to phone numbers: %+v, want the topic's SMS alone", left.Deliveries)
	}

	// Past the bound the oldest go, and the summary says how many.
	for i := 0; i < sns.MaxDeliveryRecords/10+1; i++ {
		entries := make([]snstypes.PublishBatchRequestEntry, 10)
		for j := range entries {
			entries[j] = snstypes.PublishBatchRequestEntry{Id: aws.String("e" + strconv.Itoa(j)), Message: aws.String("m")}
		}
		out, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: entries})
		if err != nil || len(out.Failed) != 0 {
			t.Fatalf("PublishBatch: %v %+v", err, out)
		}
	}
	// 1 + 1,010 recorded, 1,000 kept.
	getJSON(t, srv.URL+"/admin/api/sns/record?topic=alerts", &view)
	if r := view.Record; r.Selected != sns.MaxDeliveryRecords || r.Kept != sns.MaxDeliveryRecords || r.Dropped != 11 {
		b, _ := json.Marshal(r)
		t.Errorf("record after 1,011 copies = %s, want 1000 selected and kept, 11 dropped", b)
	}
}

func mustTopic(t *testing.T, c *awssns.Client, name string) string {
	t.Helper()
	out, err := c.CreateTopic(context.Background(), &awssns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return *out.TopicArn
}
