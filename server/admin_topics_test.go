package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// TestAdminTopicsView: GET /admin/api/topics lists the region's topics
// with their subscriptions and counts, and the region's recent publishes
// with each copy's outcome; ?region= selects another region.
func TestAdminTopicsView(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.SNSClient()
	srv.MustCreateQueue(t, "home-q", nil)
	topic := mustCreateTopic(t, c, "home")
	sub := mustSubscribe(t, c, topic, snsQueueARN("home-q"), map[string]string{"RawMessageDelivery": "true"})
	out, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m")})
	if err != nil {
		t.Fatal(err)
	}
	eu := awssns.New(c.Options(), func(o *awssns.Options) { o.Region = "eu-west-1" })
	if _, err := eu.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("abroad")}); err != nil {
		t.Fatal(err)
	}
	view := func(query string) server.TopicListJSON {
		t.Helper()
		code, _, body := fetch(t, "GET", srv.URL+"/admin/api/topics"+query, nil, "")
		if code != http.StatusOK {
			t.Fatalf("GET /admin/api/topics%s: %d %s", query, code, body)
		}
		var v server.TopicListJSON
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	home := view("")
	if !home.Served || len(home.Topics) != 1 || home.Topics[0].Name != "home" || home.Topics[0].Publishes != 1 || home.Topics[0].Delivered != 1 {
		t.Fatalf("topics view = %+v, want home with 1 publish delivered once", home)
	}
	want := server.SubscriptionJSON{ARN: sub, Protocol: "sqs", Endpoint: snsQueueARN("home-q"), Queue: "home-q", Raw: true,
		QueuePolicy: "AWS would not deliver its copies: the queue has no Policy, and only a Policy statement lets sns.amazonaws.com sqs:SendMessage to it"}
	if got := home.Topics[0].Subscriptions; len(got) != 1 || got[0] != want {
		t.Errorf("home's subscriptions = %+v, want %+v", got, want)
	}
	if len(home.Recent) != 1 || home.Recent[0].MessageID != *out.MessageId || len(home.Recent[0].Outcomes) != 1 ||
		home.Recent[0].Outcomes[0].Outcome != "delivered" || home.Recent[0].Outcomes[0].Queue != "home-q" {
		t.Errorf("recent publishes = %+v, want %s delivered to home-q", home.Recent, *out.MessageId)
	}
	abroad := view("?region=eu-west-1")
	if len(abroad.Topics) != 1 || abroad.Topics[0].Name != "abroad" || len(abroad.Recent) != 0 {
		t.Errorf("eu-west-1's view = %+v, want abroad only and no publish", abroad)
	}
}

// TestAdminTopicsHTTPOutcome: an HTTP/S subscription's copy is recorded as
// queued for its endpoint, where AWS's delivery retries take over.
func TestAdminTopicsHTTPOutcome(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.SNSClient()
	topic := mustCreateTopic(t, c, "hooked")
	ep := newEndpoint(t)
	_, conf := subscribeHTTP(t, c, ep, topic, nil)
	sub := confirmByURL(t, conf)
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m")}); err != nil {
		t.Fatal(err)
	}
	code, _, body := fetch(t, "GET", srv.URL+"/admin/api/topics", nil, "")
	var v server.TopicListJSON
	if code != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("GET /admin/api/topics: %d %s", code, body)
	}
	if len(v.Recent) != 1 || len(v.Recent[0].Outcomes) != 1 || v.Recent[0].Outcomes[0].Subscription != sub || v.Recent[0].Outcomes[0].Outcome != "queued" {
		t.Errorf("recent publishes = %+v, want one copy queued for %s", v.Recent, sub)
	}
}
