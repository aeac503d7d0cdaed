package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
)

// hit is one request an endpoint received.
type hit struct {
	method string
	header http.Header
	body   string
}

// endpoint is an HTTP/S subscriber on loopback that records what SNS
// posts and answers with the status it is set to.
type endpoint struct {
	*httptest.Server
	status atomic.Int32
	mu     sync.Mutex
	hits   []hit
}

func newEndpoint(tb testing.TB) *endpoint {
	e := &endpoint{}
	e.status.Store(200)
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.hits = append(e.hits, hit{method: r.Method, header: r.Header.Clone(), body: string(b)})
		e.mu.Unlock()
		w.WriteHeader(int(e.status.Load()))
	}))
	tb.Cleanup(e.Close)
	return e
}

func (e *endpoint) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.hits)
}

// waitHits waits up to 10 s of real time for the endpoint's n-th request
// and returns it.
func (e *endpoint) waitHits(tb testing.TB, n int) hit {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.count() < n {
		if time.Now().After(deadline) {
			tb.Fatalf("the endpoint got %d requests, want %d", e.count(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits[n-1]
}

// fields reads a JSON body's members.
func fields(tb testing.TB, body string) map[string]string {
	tb.Helper()
	var f map[string]any
	if err := json.Unmarshal([]byte(body), &f); err != nil {
		tb.Fatalf("body is not JSON: %v: %s", err, body)
	}
	out := make(map[string]string)
	for k, v := range f {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// wantHeaders checks the headers SNS posts with, exactly as AWS sends
// them (absent ones as ""), in lower case on the wire.
func wantHeaders(tb testing.TB, h hit, want map[string]string) {
	tb.Helper()
	if h.method != http.MethodPost {
		tb.Errorf("method %s, want POST", h.method)
	}
	for k, v := range want {
		if got := h.header.Get(k); got != v {
			tb.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
}

// subscribeHTTP subscribes the endpoint, checks the pending answer and the
// SubscriptionConfirmation posted to it, and returns its token and the
// confirmation.
func subscribeHTTP(tb testing.TB, c *awssns.Client, ep *endpoint, topic string, attrs map[string]string) (token string, conf hit) {
	tb.Helper()
	n := ep.count()
	out, err := c.Subscribe(context.Background(), &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("http"),
		Endpoint: aws.String(ep.URL + "/hook"), Attributes: attrs})
	if err != nil {
		tb.Fatalf("Subscribe %s: %v", ep.URL, err)
	}
	if *out.SubscriptionArn != "pending confirmation" {
		tb.Errorf("Subscribe answered %q, want %q", *out.SubscriptionArn, "pending confirmation")
	}
	conf = ep.waitHits(tb, n+1)
	return fields(tb, conf.body)["Token"], conf
}

// TestSNSHTTPSubscriptionConfirmation: an http subscription is pending and
// its endpoint is posted a signed SubscriptionConfirmation with AWS's
// headers and members; ConfirmSubscription with its Token confirms it,
// again idempotently, and refuses bad tokens as AWS does.
func TestSNSHTTPSubscriptionConfirmation(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "hooks")
	ep := newEndpoint(t)
	token, conf := subscribeHTTP(t, c, ep, topic, nil)

	wantHeaders(t, conf, map[string]string{
		"x-amz-sns-message-type": "SubscriptionConfirmation", "x-amz-sns-topic-arn": topic,
		"x-amz-sns-subscription-arn": "", "x-amz-sns-rawdelivery": "",
		"Content-Type": "text/plain; charset=UTF-8", "User-Agent": "Amazon Simple Notification Service Agent",
	})
	f := fields(t, conf.body)
	if conf.header.Get("x-amz-sns-message-id") != f["MessageId"] || f["MessageId"] == "" {
		t.Errorf("x-amz-sns-message-id %q, MessageId %q", conf.header.Get("x-amz-sns-message-id"), f["MessageId"])
	}
	wantMsg := "You have chosen to subscribe to the topic " + topic + ".\nTo confirm the subscription, visit the SubscribeURL included in this message."
	if f["Type"] != "SubscriptionConfirmation" || f["TopicArn"] != topic || f["Message"] != wantMsg || f["SignatureVersion"] != "1" {
		t.Errorf("confirmation members: %v", f)
	}
	if want := srv.URL + "/?Action=ConfirmSubscription&TopicArn=" + topic + "&Token=" + token; f["SubscribeURL"] != want {
		t.Errorf("SubscribeURL = %q, want %q", f["SubscribeURL"], want)
	}
	keys := []string{`"Type" : `, `"MessageId" : `, `"Token" : `, `"TopicArn" : `, `"Message" : `, `"SubscribeURL" : `,
		`"Timestamp" : `, `"SignatureVersion" : `, `"Signature" : `, `"SigningCertURL" : `}
	at := 0
	for _, k := range keys {
		i := strings.Index(conf.body, k)
		if i < at {
			t.Errorf("member %s out of AWS's order in %s", k, conf.body)
		}
		at = i
	}
	verifyBody(t, conf.body, "")

	list, err := c.ListSubscriptionsByTopic(ctx, &awssns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Subscriptions) != 1 || *list.Subscriptions[0].SubscriptionArn != "PendingConfirmation" {
		t.Errorf("pending subscription listed as %+v", list.Subscriptions)
	}

	for _, tc := range []struct{ topic, token, msg string }{
		{topic, "zz-not-hex", "Invalid token"},
		{topic, strings.Repeat("ab", 80), "Invalid parameter: Token"},
		{"arn:aws:sns:eu-west-1:" + testutil.Account + ":hooks", token, "Invalid parameter: Topic"},
		{"not-an-arn", token, "Invalid parameter: Topic"},
	} {
		_, err := c.ConfirmSubscription(ctx, &awssns.ConfirmSubscriptionInput{TopicArn: aws.String(tc.topic), Token: aws.String(tc.token)})
		wantSNSError(t, err, "InvalidParameter", 400, tc.msg)
	}

	out, err := c.ConfirmSubscription(ctx, &awssns.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(token)})
	if err != nil {
		t.Fatalf("ConfirmSubscription: %v", err)
	}
	sub := *out.SubscriptionArn
	if !strings.HasPrefix(sub, topic+":") {
		t.Fatalf("SubscriptionArn %q", sub)
	}
	again, err := c.ConfirmSubscription(ctx, &awssns.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(token)})
	if err != nil || *again.SubscriptionArn != sub {
		t.Errorf("ConfirmSubscription again: %v %v", again, err)
	}
	attrs, err := c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if err != nil {
		t.Fatal(err)
	}
	if a := attrs.Attributes; a["PendingConfirmation"] != "false" || a["Protocol"] != "http" || a["Endpoint"] != ep.URL+"/hook" ||
		!strings.Contains(a["EffectiveDeliveryPolicy"], `"numRetries":3`) {
		t.Errorf("attributes once confirmed: %v", a)
	}

	if a := attrs.Attributes; a["ConfirmationWasAuthenticated"] != "true" {
		t.Errorf("confirmed by a signed call: ConfirmationWasAuthenticated %q", a["ConfirmationWasAuthenticated"])
	}
	pendingOut, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("http"),
		Endpoint: aws.String(newEndpoint(t).URL), ReturnSubscriptionArn: true})
	if err != nil || !strings.HasPrefix(*pendingOut.SubscriptionArn, topic+":") {
		t.Fatalf("Subscribe with ReturnSubscriptionArn: %v %v", pendingOut, err)
	}
	pa, err := c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: pendingOut.SubscriptionArn})
	if err != nil || pa.Attributes["PendingConfirmation"] != "true" || pa.Attributes["ConfirmationWasAuthenticated"] != "false" {
		t.Errorf("a pending subscription's attributes: %v %v", pa, err)
	}

	// A token lasts two days.
	token2, _ := subscribeHTTP(t, c, newEndpoint(t), topic, nil)
	srv.Clock.Advance(49 * time.Hour)
	_, err = c.ConfirmSubscription(ctx, &awssns.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(token2)})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Token")
}

// confirmByURL visits a confirmation's SubscribeURL, unsigned, as a
// subscriber does, and returns the subscription's ARN from the XML answer.
func confirmByURL(tb testing.TB, conf hit) string {
	tb.Helper()
	resp, err := http.Get(fields(tb, conf.body)["SubscribeURL"])
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	const open, end = "<SubscriptionArn>", "</SubscriptionArn>"
	i, j := strings.Index(body, open), strings.Index(body, end)
	if resp.StatusCode != 200 || !strings.Contains(body, "<ConfirmSubscriptionResponse") || i < 0 || j < i {
		tb.Fatalf("SubscribeURL: %d %s", resp.StatusCode, body)
	}
	return body[i+len(open) : j]
}

// TestSNSHTTPDelivery: a subscription confirmed through its SubscribeURL
// is posted each publish with AWS's headers: the signed envelope, or the
// message alone with x-amz-sns-rawdelivery for raw delivery; nothing is
// posted to a subscription still pending.
func TestSNSHTTPDelivery(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "deliver")
	env, raw, pending := newEndpoint(t), newEndpoint(t), newEndpoint(t)
	_, conf := subscribeHTTP(t, c, env, topic, nil)
	envSub := confirmByURL(t, conf)
	_, conf = subscribeHTTP(t, c, raw, topic, map[string]string{"RawMessageDelivery": "true"})
	rawSub := confirmByURL(t, conf)
	subscribeHTTP(t, c, pending, topic, nil)

	pub, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(`{"order":"42 / ok"}`),
		Subject: aws.String("New order"), MessageAttributes: map[string]snstypes.MessageAttributeValue{
			"kind": {DataType: aws.String("String"), StringValue: aws.String("order")}}})
	if err != nil {
		t.Fatal(err)
	}
	h := env.waitHits(t, 2)
	wantHeaders(t, h, map[string]string{
		"x-amz-sns-message-type": "Notification", "x-amz-sns-message-id": *pub.MessageId, "x-amz-sns-topic-arn": topic,
		"x-amz-sns-subscription-arn": envSub, "x-amz-sns-rawdelivery": "",
		"Content-Type": "text/plain; charset=UTF-8", "User-Agent": "Amazon Simple Notification Service Agent",
	})
	f := fields(t, h.body)
	want := "{\n" +
		`  "Type" : "Notification",` + "\n" +
		`  "MessageId" : "` + *pub.MessageId + `",` + "\n" +
		`  "TopicArn" : "` + topic + `",` + "\n" +
		`  "Subject" : "New order",` + "\n" +
		`  "Message" : "{\"order\":\"42 / ok\"}",` + "\n" +
		`  "Timestamp" : "` + f["Timestamp"] + `",` + "\n" +
		`  "SignatureVersion" : "1",` + "\n" +
		`  "Signature" : "` + f["Signature"] + `",` + "\n" +
		`  "SigningCertURL" : "` + f["SigningCertURL"] + `",` + "\n" +
		`  "UnsubscribeURL" : "` + srv.URL + `/?Action=Unsubscribe&SubscriptionArn=` + envSub + `",` + "\n" +
		`  "MessageAttributes" : {` + "\n" +
		`    "kind" : {"Type":"String","Value":"order"}` + "\n" +
		"  }\n}"
	if h.body != want {
		t.Errorf("envelope posted:\n%s\nwant:\n%s", h.body, want)
	}
	verifyBody(t, h.body, "")

	h = raw.waitHits(t, 2)
	wantHeaders(t, h, map[string]string{
		"x-amz-sns-message-type": "Notification", "x-amz-sns-message-id": *pub.MessageId,
		"x-amz-sns-subscription-arn": rawSub, "x-amz-sns-rawdelivery": "true", "Content-Type": "text/plain; charset=UTF-8",
	})
	if h.body != `{"order":"42 / ok"}` {
		t.Errorf("raw body %q", h.body)
	}
	// Baton's own delivery queue shows in no listing.
	qs, err := srv.Client.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(qs.QueueUrls) != 0 {
		t.Errorf("ListQueues shows %v", qs.QueueUrls)
	}
	for _, path := range []string{"/metrics", "/admin/api/queues"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(b), "sns-http-deliveries") {
			t.Errorf("%s: %d, shows the delivery queue: %s", path, resp.StatusCode, b)
		}
	}
	// The pending subscription got its confirmation and nothing else.
	time.Sleep(50 * time.Millisecond)
	if n := pending.count(); n != 1 {
		t.Errorf("a pending subscription's endpoint got %d requests, want 1 (its confirmation)", n)
	}
}

// TestSNSHTTPDeliveryOfCharactersNoQueueTakes: SNS takes in a Subject and
// in a message attribute's value characters that a queue's message may not
// hold (U+FFFE, U+FFFF). A publish with them to HTTP/S subscriptions is
// answered as any other, not InternalError (which the client would retry,
// each retry a new copy for every other subscription), and each endpoint
// is posted what was published: the envelope, signed, with the subject and
// the attribute as sent; the raw message.
func TestSNSHTTPDeliveryOfCharactersNoQueueTakes(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "odd-characters")
	env, raw := newEndpoint(t), newEndpoint(t)
	_, conf := subscribeHTTP(t, c, env, topic, nil)
	confirmByURL(t, conf)
	_, conf = subscribeHTTP(t, c, raw, topic, map[string]string{"RawMessageDelivery": "true"})
	confirmByURL(t, conf)

	subject, value := "a\uFFFEb", "c\uFFFFd"
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("hello"), Subject: aws.String(subject),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"odd": {DataType: aws.String("String"), StringValue: aws.String(value)}}}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	h := env.waitHits(t, 2)
	f := fields(t, h.body)
	if f["Subject"] != subject || f["Message"] != "hello" || !strings.Contains(h.body, `"odd" : {"Type":"String","Value":"`+value+`"}`) {
		t.Errorf("envelope posted: %s", h.body)
	}
	verifyBody(t, h.body, "")
	if h = raw.waitHits(t, 2); h.body != "hello" {
		t.Errorf("raw body %q, want hello", h.body)
	}
}

// TestSNSHTTPRetriesAndDeadLetter: an endpoint answering 500 is tried
// again by the default policy, 20 s apart on the engine's clock (never
// sooner), and taken once it answers 200; one that keeps failing is tried
// four times (three retries), and the envelope then goes to the
// subscription's dead-letter queue.
func TestSNSHTTPRetriesAndDeadLetter(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "retries")
	dlq := srv.MustCreateQueue(t, "hook-dlq", nil)
	ep := newEndpoint(t)
	_, conf := subscribeHTTP(t, c, ep, topic, map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + snsQueueARN("hook-dlq") + `"}`})
	confirmByURL(t, conf)
	idle := func() { srv.WaitForTimers(t, 8) } // every delivery worker waits again

	ep.status.Store(500)
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("first")}); err != nil {
		t.Fatal(err)
	}
	first := ep.waitHits(t, 2)
	idle()
	srv.Clock.Advance(19 * time.Second)
	idle()
	if n := ep.count(); n != 2 {
		t.Fatalf("%d attempts 19 s after the first failed, want none yet", n-1)
	}
	srv.Clock.Advance(time.Second)
	retry := ep.waitHits(t, 3)
	if retry.body != first.body || retry.header.Get("x-amz-sns-message-id") != first.header.Get("x-amz-sns-message-id") {
		t.Errorf("a retry posted another message:\n%s\n%s", retry.body, first.body)
	}
	ep.status.Store(200)
	idle()
	srv.Clock.Advance(20 * time.Second)
	ep.waitHits(t, 4)
	idle()
	srv.Clock.Advance(time.Minute)
	idle()
	if n := ep.count(); n != 4 {
		t.Errorf("%d requests after the endpoint took the message, want 4 (confirmation and three attempts)", n)
	}

	// One that keeps failing: four attempts, then the dead-letter queue.
	ep.status.Store(503)
	pub, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("doomed")})
	if err != nil {
		t.Fatal(err)
	}
	for i := 5; i <= 8; i++ {
		ep.waitHits(t, i)
		idle()
		srv.Clock.Advance(20 * time.Second)
	}
	m := receiveCopy(t, srv.Client, dlq)
	f := envelopeFields(t, m)
	if f["Type"] != "Notification" || f["Message"] != "doomed" || f["MessageId"] != *pub.MessageId {
		t.Errorf("dead-lettered copy: %s", *m.Body)
	}
	verifySignature(t, m)
	if len(m.MessageAttributes) != 0 {
		t.Errorf("dead-lettered envelope carries attributes %v; AWS adds none", m.MessageAttributes)
	}
	idle()
	srv.Clock.Advance(time.Minute)
	idle()
	if n := ep.count(); n != 8 {
		t.Errorf("%d requests, want 8: no attempt after the policy is exhausted", n)
	}
}

// TestSNSDeadLetterDeletedQueue: a copy for a deleted queue goes to the
// subscription's dead-letter queue (the envelope, or the raw message with
// its attributes), not silently away, and the publish succeeds.
func TestSNSDeadLetterDeletedQueue(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "gone")
	dlq := srv.MustCreateQueue(t, "gone-dlq", nil)
	redrive := map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + snsQueueARN("gone-dlq") + `"}`}
	envQ := srv.MustCreateQueue(t, "gone-env", nil)
	rawQ := srv.MustCreateQueue(t, "gone-raw", nil)
	mustSubscribe(t, c, topic, snsQueueARN("gone-env"), redrive)
	rawRedrive := map[string]string{"RawMessageDelivery": "true", "RedrivePolicy": redrive["RedrivePolicy"]}
	mustSubscribe(t, c, topic, snsQueueARN("gone-raw"), rawRedrive)
	for _, q := range []string{envQ, rawQ} {
		if _, err := srv.Client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("orphan"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}}}); err != nil {
		t.Fatalf("Publish to a deleted queue's subscription: %v", err)
	}
	out, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MaxNumberOfMessages: 10,
		MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	var sawEnv, sawRaw bool
	for _, m := range out.Messages {
		switch {
		case *m.Body == "orphan":
			sawRaw = true
			if a := m.MessageAttributes["k"]; a.StringValue == nil || *a.StringValue != "v" {
				t.Errorf("raw dead-lettered copy's attributes %v", m.MessageAttributes)
			}
		case envelopeFields(t, m)["Message"] == "orphan":
			sawEnv = true
			verifySignature(t, m)
		}
	}
	if len(out.Messages) != 2 || !sawEnv || !sawRaw {
		t.Errorf("dead-letter queue holds %d messages (envelope %v, raw %v), want both copies", len(out.Messages), sawEnv, sawRaw)
	}
}

// TestSNSRedrivePolicyValidation pins AWS's answers to a bad RedrivePolicy
// and its removal with "".
func TestSNSRedrivePolicyValidation(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "rp")
	sub := mustSubscribe(t, c, topic, snsQueueARN("rp-q"), nil)
	set := func(v string) error {
		_, err := c.SetSubscriptionAttributes(ctx, &awssns.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub),
			AttributeName: aws.String("RedrivePolicy"), AttributeValue: aws.String(v)})
		return err
	}
	wantSNSError(t, set(`{"deadLetterTargetArn":"arn:aws:sns:us-east-1:`+testutil.Account+`:x"}`), "InvalidParameter", 400,
		"Invalid parameter: RedrivePolicy: deadLetterTargetArn is an invalid arn")
	err := set(`{not json`)
	wantAPIError(t, err, "InvalidParameter", 400)
	if err == nil || !strings.Contains(err.Error(), "Invalid parameter: RedrivePolicy: failed to parse JSON.") {
		t.Errorf("bad JSON: %v", err)
	}
	_, err = c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"), Endpoint: aws.String(snsQueueARN("rp-2")),
		Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"nope"}`}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Attributes Reason: RedrivePolicy: deadLetterTargetArn is an invalid arn")
	// An SQS queue's maxReceiveCount is no member of a subscription's
	// RedrivePolicy: AWS's texts, as AWS answered them to Subscribe and to
	// SetSubscriptionAttributes.
	withCount := `{"deadLetterTargetArn":"` + snsQueueARN("rp-dlq") + `","maxReceiveCount":5}`
	wantSNSError(t, set(withCount), "InvalidParameter", 400, "Invalid parameter: RedrivePolicy: invalid JSON. Attribute maxReceiveCount is unknown.")
	_, err = c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"), Endpoint: aws.String(snsQueueARN("rp-2")),
		Attributes: map[string]string{"RedrivePolicy": withCount}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Attributes Reason: RedrivePolicy: invalid JSON. Attribute maxReceiveCount is unknown.")
	good := `{"deadLetterTargetArn":"` + snsQueueARN("rp-dlq") + `"}`
	if err := set(good); err != nil {
		t.Fatal(err)
	}
	attrs, err := c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if err != nil || attrs.Attributes["RedrivePolicy"] != good {
		t.Fatalf("RedrivePolicy = %q, %v", attrs.Attributes["RedrivePolicy"], err)
	}
	if err := set(""); err != nil {
		t.Fatal(err)
	}
	attrs, _ = c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if _, ok := attrs.Attributes["RedrivePolicy"]; ok {
		t.Errorf("RedrivePolicy still shown after removal: %v", attrs.Attributes)
	}
}

// TestSNSDeliveryPolicy: a topic's DeliveryPolicy is checked, stored as
// AWS stores it and shown in EffectiveDeliveryPolicy; a subscription's
// policy (one retry, 5 s apart) governs its retries.
func TestSNSDeliveryPolicy(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "dp")
	setTopic := func(v string) error {
		_, err := c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(topic),
			AttributeName: aws.String("DeliveryPolicy"), AttributeValue: aws.String(v)})
		return err
	}
	for _, bad := range []string{
		`{"http":{"defaultHealthyRetryPolicy":{"numRetries":101}}}`,
		`{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":30,"maxDelayTarget":20}}}`,
		`{"http":{"defaultHealthyRetryPolicy":{"backoffFunction":"cubic"}}}`,
		`{"http":{"defaultThrottlePolicy":{"maxReceivesPerSecond":0}}}`,
		`{"http":{"defaultHealthyRetryPolicy":{"numRetries":100,"minDelayTarget":3600,"maxDelayTarget":3600}}}`,
		`{"http":{"bogus":1}}`,
	} {
		wantAPIError(t, setTopic(bad), "InvalidParameter", 400)
	}
	if err := setTopic(`{"http":{"defaultHealthyRetryPolicy":{"numRetries":5,"minDelayTarget":2,"maxDelayTarget":40,"backoffFunction":"exponential"}}}`); err != nil {
		t.Fatal(err)
	}
	attrs, err := c.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String(topic)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := attrs.Attributes["DeliveryPolicy"], `{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":2,"maxDelayTarget":40,"numRetries":5,"backoffFunction":"exponential"},"disableSubscriptionOverrides":false}}`; got != want {
		t.Errorf("DeliveryPolicy = %s\nwant %s", got, want)
	}
	if got, want := attrs.Attributes["EffectiveDeliveryPolicy"], `{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":2,"maxDelayTarget":40,"numRetries":5,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"exponential"},"disableSubscriptionOverrides":false,"defaultRequestPolicy":{"headerContentType":"text/plain; charset=UTF-8"}}}`; got != want {
		t.Errorf("EffectiveDeliveryPolicy = %s\nwant %s", got, want)
	}

	dlq := srv.MustCreateQueue(t, "dp-dlq", nil)
	ep := newEndpoint(t)
	_, conf := subscribeHTTP(t, c, ep, topic, map[string]string{
		"DeliveryPolicy": `{"healthyRetryPolicy":{"numRetries":1,"minDelayTarget":5,"maxDelayTarget":5},"requestPolicy":{"headerContentType":"application/json"}}`,
		"RedrivePolicy":  `{"deadLetterTargetArn":"` + snsQueueARN("dp-dlq") + `"}`})
	sub := confirmByURL(t, conf)
	sa, err := c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sa.Attributes["DeliveryPolicy"], `{"healthyRetryPolicy":{"minDelayTarget":5,"maxDelayTarget":5,"numRetries":1},"sicklyRetryPolicy":null,"throttlePolicy":null,"requestPolicy":{"headerContentType":"application/json"},"guaranteed":false}`; got != want {
		t.Errorf("subscription DeliveryPolicy = %s\nwant %s", got, want)
	}
	ep.status.Store(500)
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	h := ep.waitHits(t, 2)
	if ct := h.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want the policy's application/json", ct)
	}
	srv.WaitForTimers(t, 8)
	srv.Clock.Advance(5 * time.Second)
	ep.waitHits(t, 3)
	srv.WaitForTimers(t, 8)
	m := receiveCopy(t, srv.Client, dlq)
	if envelopeFields(t, m)["Message"] != "x" {
		t.Errorf("dead-lettered %s", *m.Body)
	}
}

// TestSNSHTTPThrottleRefusalAndAuth: maxReceivesPerSecond 1 puts a second
// message off by a second of the engine's clock; an endpoint answering 4xx
// is not retried and its copy goes to the dead-letter queue; credentials
// in the endpoint's URL are sent as Basic authentication.
func TestSNSHTTPThrottleRefusalAndAuth(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "throttle")
	dlq := srv.MustCreateQueue(t, "throttle-dlq", nil)
	ep := newEndpoint(t)
	u := strings.Replace(ep.URL, "http://", "http://user:secret@", 1) + "/hook"
	out, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("http"), Endpoint: aws.String(u),
		Attributes: map[string]string{"DeliveryPolicy": `{"throttlePolicy":{"maxReceivesPerSecond":1}}`,
			"RedrivePolicy": `{"deadLetterTargetArn":"` + snsQueueARN("throttle-dlq") + `"}`}})
	if err != nil || *out.SubscriptionArn != "pending confirmation" {
		t.Fatalf("Subscribe: %v %v", out, err)
	}
	conf := ep.waitHits(t, 1)
	if user, pass, ok := (&http.Request{Header: conf.header}).BasicAuth(); !ok || user != "user" || pass != "secret" {
		t.Errorf("Basic authentication %q %q %v", user, pass, ok)
	}
	confirmByURL(t, conf)
	srv.WaitForTimers(t, 8)
	srv.Clock.Advance(time.Second) // the confirmation took this second's slot
	for _, m := range []string{"one", "two"} {
		if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(m)}); err != nil {
			t.Fatal(err)
		}
	}
	ep.waitHits(t, 2)
	srv.WaitForTimers(t, 8)
	if n := ep.count(); n != 2 {
		t.Fatalf("%d requests within one second, want 2 (the confirmation and one message)", n)
	}
	srv.Clock.Advance(time.Second)
	ep.waitHits(t, 3)

	ep.status.Store(404)
	srv.WaitForTimers(t, 8)
	srv.Clock.Advance(time.Second)
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("refused")}); err != nil {
		t.Fatal(err)
	}
	ep.waitHits(t, 4)
	srv.WaitForTimers(t, 8) // the worker has dead-lettered it
	m := receiveCopy(t, srv.Client, dlq)
	if envelopeFields(t, m)["Message"] != "refused" {
		t.Errorf("dead-lettered %s", *m.Body)
	}
	srv.WaitForTimers(t, 8)
	srv.Clock.Advance(time.Minute)
	srv.WaitForTimers(t, 8)
	if n := ep.count(); n != 4 {
		t.Errorf("%d requests, want 4: a 4xx is not retried", n)
	}
}

// TestSNSCrossAccountQueueConfirmation: a queue of another account is
// subscribed pending, sent a signed SubscriptionConfirmation as a message,
// given nothing until its owner confirms with the Token, and delivered to
// after.
func TestSNSCrossAccountQueueConfirmation(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{
		{AccessKeyID: "AKIDALICE", SecretAccessKey: "alice-secret", Account: "111111111111"},
		{AccessKeyID: "AKIDBOB", SecretAccessKey: "bob-secret", Account: "222222222222"},
	}})
	ctx := context.Background()
	alice, bobSNS, bobSQS := srv.SNSClient(), srv.SNSClientFor("AKIDBOB", "bob-secret"), srv.ClientFor("AKIDBOB", "bob-secret")
	topic := mustCreateTopic(t, alice, "shared")
	q, err := bobSQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("inbox")})
	if err != nil {
		t.Fatal(err)
	}
	out, err := alice.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
		Endpoint: aws.String("arn:aws:sqs:us-east-1:222222222222:inbox")})
	if err != nil {
		t.Fatalf("Subscribe another account's queue: %v", err)
	}
	if *out.SubscriptionArn != "pending confirmation" {
		t.Fatalf("Subscribe another account's queue answered %q, want pending confirmation", *out.SubscriptionArn)
	}
	m := receiveCopy(t, bobSQS, *q.QueueUrl)
	f := fields(t, *m.Body)
	if f["Type"] != "SubscriptionConfirmation" || f["TopicArn"] != topic || f["Token"] == "" {
		t.Fatalf("confirmation message: %s", *m.Body)
	}
	verifyBody(t, *m.Body, "")
	if _, err := bobSQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("early")}); err != nil {
		t.Fatal(err)
	}
	early, err := bobSQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})
	if err != nil || len(early.Messages) != 0 {
		t.Fatalf("a pending subscription's queue got %v (%v)", early.Messages, err)
	}
	attrs, err := alice.ListSubscriptionsByTopic(ctx, &awssns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil || len(attrs.Subscriptions) != 1 || *attrs.Subscriptions[0].SubscriptionArn != "PendingConfirmation" {
		t.Fatalf("pending subscription listed as %v (%v)", attrs, err)
	}
	// The SubscribeURL confirms unsigned though credentials are required;
	// the owner's signed ConfirmSubscription then answers the same ARN.
	sub := confirmByURL(t, hit{body: *m.Body})
	conf, err := bobSNS.ConfirmSubscription(ctx, &awssns.ConfirmSubscriptionInput{TopicArn: aws.String(topic), Token: aws.String(f["Token"])})
	if err != nil || *conf.SubscriptionArn != sub || !strings.HasPrefix(sub, topic+":") {
		t.Fatalf("ConfirmSubscription by the queue's owner: %v %v, want %s", conf, err, sub)
	}
	sa, err := alice.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if err != nil || sa.Attributes["PendingConfirmation"] != "false" {
		t.Errorf("attributes once confirmed: %v %v", sa, err)
	}
	if _, err := alice.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("after")}); err != nil {
		t.Fatal(err)
	}
	if got := envelopeFields(t, receiveCopy(t, bobSQS, *q.QueueUrl))["Message"]; got != "after" {
		t.Errorf("delivered %v, want after", got)
	}
}

// TestSNSHTTPDeliveryOutlivesNode: on two nodes of one shared store, a
// delivery queued by a node that then stops is delivered by the other,
// which finds Baton's delivery queue made meanwhile and starts its
// workers.
func TestSNSHTTPDeliveryOutlivesNode(t *testing.T) {
	t.Parallel()
	cluster := memstore.NewCluster()
	clk := clock.NewFake(testutil.Epoch)
	type node struct {
		url string
		eng *engine.Engine
		svc *sns.Service
	}
	start := func() node {
		st := cluster.Open()
		eng, err := engine.New(engine.Config{Store: st, Clock: clk, Region: batontest.Region})
		if err != nil {
			t.Fatal(err)
		}
		svc := sns.ForStore(eng, st, nil)
		if svc == nil {
			t.Fatal("a cluster handle keeps no topics")
		}
		hs := httptest.NewServer(server.New(server.Config{Engine: eng, Account: testutil.Account, SNS: svc}))
		t.Cleanup(func() { hs.Close(); eng.Close(); svc.Close(); st.Close() })
		return node{url: hs.URL, eng: eng, svc: svc}
	}
	start() // node b, started before the delivery queue exists
	a := start()
	c := awssns.New(awssns.Options{BaseEndpoint: aws.String(a.url), Region: batontest.Region,
		Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1, HTTPClient: sdkhttp.Client(nil)})
	ctx := context.Background()
	topic := mustCreateTopic(t, c, "two-nodes")
	ep := newEndpoint(t)
	_, conf := subscribeHTTP(t, c, ep, topic, nil)
	confirmByURL(t, conf)
	ep.status.Store(500)
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("handed over")}); err != nil {
		t.Fatal(err)
	}
	ep.waitHits(t, 2) // node a's attempt failed
	deadline := time.Now().Add(10 * time.Second)
	for clk.Timers() < 9 { // node a's eight workers and node b's look
		if time.Now().After(deadline) {
			t.Fatalf("%d timers pending, want 9", clk.Timers())
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.eng.Close()
	a.svc.Close()
	ep.status.Store(200)
	clk.Advance(time.Minute) // node b looks again, and the retry is due
	if f := fields(t, ep.waitHits(t, 3).body); f["Message"] != "handed over" {
		t.Errorf("node b delivered %v", f)
	}
}
