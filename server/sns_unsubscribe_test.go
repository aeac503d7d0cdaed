package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil"
)

// visit GETs a URL unsigned, as a subscriber's browser does, and returns
// the status and body.
func visit(tb testing.TB, url string) (int, string) {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// unsubscribeURL is the UnsubscribeURL of a subscription on srvURL.
func unsubscribeURL(srvURL, sub string) string {
	return srvURL + "/?Action=Unsubscribe&SubscriptionArn=" + sub
}

// subscriptionsOf lists a topic's subscriptions as "arn protocol endpoint".
func subscriptionsOf(tb testing.TB, c *awssns.Client, topic string) []string {
	tb.Helper()
	out, err := c.ListSubscriptionsByTopic(context.Background(), &awssns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil {
		tb.Fatal(err)
	}
	var subs []string
	for _, s := range out.Subscriptions {
		subs = append(subs, *s.SubscriptionArn+" "+*s.Protocol+" "+*s.Endpoint)
	}
	return subs
}

// TestSNSHTTPUnsubscribeConfirmation: deleting a confirmed http
// subscription, by the signed API or by its unsigned UnsubscribeURL, posts
// the endpoint a signed UnsubscribeConfirmation with AWS's headers and
// members (AWS's developer guide, "HTTP/HTTPS unsubscribe confirmation
// JSON format"); its SubscribeURL, or ConfirmSubscription with its Token,
// restores the subscription with its ARN and attributes.
func TestSNSHTTPUnsubscribeConfirmation(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "farewell")
	ep := newEndpoint(t)
	_, conf := subscribeHTTP(t, c, ep, topic, map[string]string{"RawMessageDelivery": "true"})
	sub := confirmByURL(t, conf)

	if _, err := c.Unsubscribe(ctx, &awssns.UnsubscribeInput{SubscriptionArn: aws.String(sub)}); err != nil {
		t.Fatal(err)
	}
	bye := ep.waitHits(t, 2)
	wantHeaders(t, bye, map[string]string{
		"x-amz-sns-message-type": "UnsubscribeConfirmation", "x-amz-sns-topic-arn": topic,
		"x-amz-sns-subscription-arn": sub, "x-amz-sns-rawdelivery": "",
		"Content-Type": "text/plain; charset=UTF-8", "User-Agent": "Amazon Simple Notification Service Agent",
	})
	f := fields(t, bye.body)
	if bye.header.Get("x-amz-sns-message-id") != f["MessageId"] || f["MessageId"] == "" || f["Token"] == "" {
		t.Errorf("x-amz-sns-message-id %q, MessageId %q, Token %q", bye.header.Get("x-amz-sns-message-id"), f["MessageId"], f["Token"])
	}
	// The body, byte for byte: AWS's members in AWS's order and words.
	want := "{\n" +
		`  "Type" : "UnsubscribeConfirmation",` + "\n" +
		`  "MessageId" : "` + f["MessageId"] + `",` + "\n" +
		`  "Token" : "` + f["Token"] + `",` + "\n" +
		`  "TopicArn" : "` + topic + `",` + "\n" +
		`  "Message" : "You have chosen to deactivate subscription ` + sub + `.\nTo cancel this operation and restore the subscription, visit the SubscribeURL included in this message.",` + "\n" +
		`  "SubscribeURL" : "` + srv.URL + "/?Action=ConfirmSubscription&TopicArn=" + topic + "&Token=" + f["Token"] + `",` + "\n" +
		`  "Timestamp" : "` + srv.Clock.Now().UTC().Format("2006-01-02T15:04:05.000Z") + `",` + "\n" +
		`  "SignatureVersion" : "1",` + "\n" +
		`  "Signature" : "` + f["Signature"] + `",` + "\n" +
		`  "SigningCertURL" : "` + f["SigningCertURL"] + `"` + "\n" +
		"}"
	if bye.body != want {
		t.Errorf("UnsubscribeConfirmation body:\n%s\nwant:\n%s", bye.body, want)
	}
	verifyBody(t, bye.body, srv.URL+"/"+certNameOf(t, bye.body))
	if got := subscriptionsOf(t, c, topic); len(got) != 0 {
		t.Fatalf("after Unsubscribe the topic lists %v", got)
	}

	// Its SubscribeURL restores the subscription as it was.
	if again := confirmByURL(t, bye); again != sub {
		t.Fatalf("the SubscribeURL restored %s, want %s", again, sub)
	}
	attrs, err := c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if err != nil {
		t.Fatal(err)
	}
	if a := attrs.Attributes; a["RawMessageDelivery"] != "true" || a["PendingConfirmation"] != "false" || a["Endpoint"] != ep.URL+"/hook" ||
		a["ConfirmationWasAuthenticated"] != "false" {
		t.Errorf("restored subscription's attributes: %v", a)
	}
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("back")}); err != nil {
		t.Fatal(err)
	}
	if h := ep.waitHits(t, 3); h.body != "back" || h.header.Get("x-amz-sns-message-type") != "Notification" {
		t.Errorf("after the restore the endpoint got %s %q", h.header.Get("x-amz-sns-message-type"), h.body)
	}

	// The UnsubscribeURL, unsigned, deletes it and says goodbye too; the
	// Token, by ConfirmSubscription, restores it.
	status, body := visit(t, unsubscribeURL(srv.URL, sub))
	if status != 200 || !strings.Contains(body, "<UnsubscribeResponse") {
		t.Fatalf("UnsubscribeURL: %d %s", status, body)
	}
	bye = ep.waitHits(t, 4)
	if got := fields(t, bye.body); got["Type"] != "UnsubscribeConfirmation" || bye.header.Get("x-amz-sns-subscription-arn") != sub {
		t.Fatalf("after the UnsubscribeURL the endpoint got %s", bye.body)
	}
	out, err := c.ConfirmSubscription(ctx, &awssns.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(fields(t, bye.body)["Token"])})
	if err != nil || *out.SubscriptionArn != sub {
		t.Fatalf("ConfirmSubscription with the UnsubscribeConfirmation's token: %v %v, want %s", out, err, sub)
	}
	if got := subscriptionsOf(t, c, topic); len(got) != 1 || !strings.HasPrefix(got[0], sub+" http ") {
		t.Errorf("restored: the topic lists %v", got)
	}

	// A pending subscription is deleted without a word.
	pending := newEndpoint(t)
	pout, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("http"),
		Endpoint: aws.String(pending.URL), ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	pending.waitHits(t, 1)
	if _, err := c.Unsubscribe(ctx, &awssns.UnsubscribeInput{SubscriptionArn: pout.SubscriptionArn}); err != nil {
		t.Fatal(err)
	}
	srv.WaitForTimers(t, 8)
	srv.Clock.Advance(time.Minute)
	srv.WaitForTimers(t, 8)
	if n := pending.count(); n != 1 {
		t.Errorf("a pending subscription's endpoint got %d requests, want only its SubscriptionConfirmation", n)
	}
}

// TestSNSAuthenticateOnUnsubscribe: a subscription confirmed by a signed
// ConfirmSubscription with AuthenticateOnUnsubscribe=true refuses an
// unsigned visit of its UnsubscribeURL (403 AuthorizationError) and stays;
// the signed Unsubscribe deletes it. Confirmed unsigned, the flag does
// nothing, as AWS's reference says ("if the value of this parameter is
// true and the request has an AWS signature").
func TestSNSAuthenticateOnUnsubscribe(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "guarded")
	ep := newEndpoint(t)
	token, _ := subscribeHTTP(t, c, ep, topic, nil)
	out, err := c.ConfirmSubscription(ctx, &awssns.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(token),
		AuthenticateOnUnsubscribe: aws.String("true")})
	if err != nil {
		t.Fatal(err)
	}
	sub := *out.SubscriptionArn
	attrs, err := c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if err != nil {
		t.Fatal(err)
	}
	if a := attrs.Attributes; a["ConfirmationWasAuthenticated"] != "true" || a["AuthenticateOnUnsubscribe"] != "" {
		t.Errorf("attributes: %v", a)
	}

	status, body := visit(t, unsubscribeURL(srv.URL, sub))
	if status != 403 || !strings.Contains(body, "<Code>AuthorizationError</Code>") || !strings.Contains(body, "<Type>Sender</Type>") {
		t.Errorf("unsigned UnsubscribeURL of a guarded subscription: %d %s", status, body)
	}
	if got := subscriptionsOf(t, c, topic); len(got) != 1 {
		t.Fatalf("after a refused unsubscribe the topic lists %v", got)
	}
	srv.WaitForTimers(t, 8)
	if n := ep.count(); n != 1 {
		t.Errorf("the endpoint got %d requests, want only its SubscriptionConfirmation", n)
	}

	if _, err := c.Unsubscribe(ctx, &awssns.UnsubscribeInput{SubscriptionArn: aws.String(sub)}); err != nil {
		t.Fatalf("signed Unsubscribe of a guarded subscription: %v", err)
	}
	if got := subscriptionsOf(t, c, topic); len(got) != 0 {
		t.Errorf("after the signed Unsubscribe the topic lists %v", got)
	}
	if h := ep.waitHits(t, 2); h.header.Get("x-amz-sns-message-type") != "UnsubscribeConfirmation" {
		t.Errorf("after the signed Unsubscribe the endpoint got %s", h.body)
	}

	// Confirmed by an unsigned visit, AuthenticateOnUnsubscribe=true guards
	// nothing.
	open := newEndpoint(t)
	_, conf := subscribeHTTP(t, c, open, topic, nil)
	conf.body = strings.Replace(conf.body, `&Token=`, `&AuthenticateOnUnsubscribe=true&Token=`, 1)
	sub2 := confirmByURL(t, conf)
	if status, body := visit(t, unsubscribeURL(srv.URL, sub2)); status != 200 {
		t.Errorf("UnsubscribeURL of a subscription confirmed unsigned: %d %s", status, body)
	}
	if got := subscriptionsOf(t, c, topic); len(got) != 0 {
		t.Errorf("the topic lists %v", got)
	}
}

// TestSNSPendingSubscriptionExpiry: a subscription left pending is deleted
// 48 hours after it was made, on the engine's clock, as AWS deletes it
// (not a moment before), and is gone from ListSubscriptions; its token no
// longer confirms; subscribing the endpoint again makes a new one. A
// confirmed subscription stays.
func TestSNSPendingSubscriptionExpiry(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "waiting")
	kept := newEndpoint(t)
	_, conf := subscribeHTTP(t, c, kept, topic, nil)
	keptSub := confirmByURL(t, conf)
	ep := newEndpoint(t)
	token, _ := subscribeHTTP(t, c, ep, topic, nil)
	if _, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("email"),
		Endpoint: aws.String("ops@example.com")}); err != nil {
		t.Fatal(err)
	}
	idle := func() { srv.WaitForTimers(t, 8) }
	listed := func() []string {
		out, err := c.ListSubscriptions(ctx, &awssns.ListSubscriptionsInput{})
		if err != nil {
			t.Fatal(err)
		}
		var subs []string
		for _, s := range out.Subscriptions {
			subs = append(subs, *s.SubscriptionArn+" "+*s.Protocol)
		}
		return subs
	}

	idle()
	srv.Clock.Advance(47 * time.Hour)
	idle()
	srv.Clock.Advance(time.Hour - time.Second)
	idle()
	if got := listed(); len(got) != 3 {
		t.Fatalf("a second before 48 hours ListSubscriptions shows %v, want all three", got)
	}
	srv.Clock.Advance(time.Second)
	testutil.CheckFor(t, 10*time.Second, func() error {
		if got := listed(); len(got) != 1 || got[0] != keptSub+" http" {
			return fmt.Errorf("after 48 hours ListSubscriptions shows %v, want only the confirmed one", got)
		}
		return nil
	})
	_, err := c.ConfirmSubscription(ctx, &awssns.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(token)})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Token")

	token2, _ := subscribeHTTP(t, c, ep, topic, nil)
	if token2 == token {
		t.Error("subscribing again sent the old token")
	}
	if _, err := c.ConfirmSubscription(ctx, &awssns.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(token2)}); err != nil {
		t.Errorf("the new subscription does not confirm: %v", err)
	}
}

// TestSNSPendingExpirySurvivesRestart: on the embedded store, a pending
// subscription is deleted at its deadline by the server restarted after
// it was made.
func TestSNSPendingExpirySurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startEmbedded(t, dir)
	c := srv.SNSClient()
	topic := mustCreateTopic(t, c, "durable-pending")
	subscribeHTTP(t, c, newEndpoint(t), topic, nil)
	srv.WaitForTimers(t, 8)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	srv = startEmbedded(t, dir)
	defer srv.Close()
	c = srv.SNSClient()
	if got := subscriptionsOf(t, c, topic); len(got) != 1 {
		t.Fatalf("after the restart the topic lists %v", got)
	}
	srv.WaitForTimers(t, 8)
	srv.Clock().Advance(48 * time.Hour)
	testutil.CheckFor(t, 10*time.Second, func() error {
		if got := subscriptionsOf(t, c, topic); len(got) != 0 {
			return fmt.Errorf("48 hours on the restarted server lists %v", got)
		}
		return nil
	})
}

// TestSNSPendingExpiryOtherNode: on two nodes of one shared store, a
// pending subscription made on a node that then stops is deleted at its
// deadline by the other node. On handles of a memstore.Cluster and on two
// PostgreSQL stores of one database.
func TestSNSPendingExpiryOtherNode(t *testing.T) {
	onTwoNodes(t, pendingExpiryOtherNode)
}

func pendingExpiryOtherNode(t *testing.T, storeA, storeB baton.Store) {
	b := startNode(t, storeB) // started before the delivery queue exists
	a := startNode(t, storeA)
	topic := mustCreateTopic(t, a.SNSClient(), "two-nodes-pending")
	subscribeHTTP(t, a.SNSClient(), newEndpoint(t), topic, nil)
	a.WaitForTimers(t, 8)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b.WaitForTimers(t, 1)
	b.Clock().Advance(time.Minute) // node b looks again, finds the queue and starts its workers
	b.WaitForTimers(t, 8)
	if got := subscriptionsOf(t, b.SNSClient(), topic); len(got) != 1 {
		t.Fatalf("node b lists %v before the deadline", got)
	}
	b.Clock().Advance(48 * time.Hour)
	testutil.CheckFor(t, 10*time.Second, func() error {
		if got := subscriptionsOf(t, b.SNSClient(), topic); len(got) != 0 {
			return fmt.Errorf("node b lists %v 48 hours on", got)
		}
		return nil
	})
}
