package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/internal/testutil"
)

// drainBodies receives every message a queue holds and returns their
// bodies, sorted. A publish is answered once every copy is in its queue,
// so what a queue lacks right after it was not delivered.
func drainBodies(tb testing.TB, c *sqs.Client, queueURL string) []string {
	tb.Helper()
	var bodies []string
	for {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL),
			MaxNumberOfMessages: 10, VisibilityTimeout: 300})
		if err != nil {
			tb.Fatalf("ReceiveMessage %s: %v", queueURL, err)
		}
		if len(out.Messages) == 0 {
			slices.Sort(bodies)
			return bodies
		}
		for _, m := range out.Messages {
			bodies = append(bodies, *m.Body)
		}
	}
}

func snsAttr(dataType, v string) snstypes.MessageAttributeValue {
	return snstypes.MessageAttributeValue{DataType: aws.String(dataType), StringValue: aws.String(v)}
}

func mustSetSubAttr(tb testing.TB, c *awssns.Client, arn, name, value string) {
	tb.Helper()
	if err := setSubAttr(c, arn, name, value); err != nil {
		tb.Fatalf("SetSubscriptionAttributes %s=%s: %v", name, value, err)
	}
}

func setSubAttr(c *awssns.Client, arn, name, value string) error {
	_, err := c.SetSubscriptionAttributes(context.Background(), &awssns.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn),
		AttributeName: aws.String(name), AttributeValue: aws.String(value)})
	return err
}

func subAttrs(tb testing.TB, c *awssns.Client, arn string) map[string]string {
	tb.Helper()
	out, err := c.GetSubscriptionAttributes(context.Background(), &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn)})
	if err != nil {
		tb.Fatalf("GetSubscriptionAttributes: %v", err)
	}
	return out.Attributes
}

// TestSNSFilterPolicyFanOut: of a topic's two queue subscriptions, one
// filtering on message attributes and one on the message body, each queue
// gets exactly the publishes its policy matches; a publish nobody's policy
// matches still succeeds; PublishBatch filters as Publish does; removing
// the policy (FilterPolicy "") lets everything through again.
func TestSNSFilterPolicyFanOut(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	attrQ := srv.MustCreateQueue(t, "by-attributes", nil)
	bodyQ := srv.MustCreateQueue(t, "by-body", nil)
	topic := mustCreateTopic(t, c, "orders")
	attrSub := mustSubscribe(t, c, topic, snsQueueARN("by-attributes"), map[string]string{"RawMessageDelivery": "true",
		"FilterPolicy": `{"event": ["order_placed"], "price_usd": [{"numeric": [">=", 100]}]}`})
	bodySub := mustSubscribe(t, c, topic, snsQueueARN("by-body"), map[string]string{"RawMessageDelivery": "true"})
	mustSetSubAttr(t, c, bodySub, "FilterPolicyScope", "MessageBody")
	mustSetSubAttr(t, c, bodySub, "FilterPolicy", `{"order": {"store": [{"prefix": "example"}]}}`)

	publish := func(msg string, attrs map[string]snstypes.MessageAttributeValue) {
		t.Helper()
		out, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(msg), MessageAttributes: attrs})
		if err != nil || out.MessageId == nil {
			t.Fatalf("Publish %q: %v", msg, err)
		}
	}
	placed := map[string]snstypes.MessageAttributeValue{"event": snsAttr("String", "order_placed"), "price_usd": snsAttr("Number", "210.75")}
	publish("placed, 210.75", placed)
	publish("placed, 99", map[string]snstypes.MessageAttributeValue{"event": snsAttr("String", "order_placed"), "price_usd": snsAttr("Number", "99")})
	publish(`{"order": {"store": "example_corp"}}`, map[string]snstypes.MessageAttributeValue{"event": snsAttr("String", "order_cancelled")})
	publish(`{"order": {"store": ["other", "example_shop"]}}`, placed)
	publish(`{"order": {"store": "other"}}`, nil)
	batch, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		{Id: aws.String("1"), Message: aws.String("batch placed"), MessageAttributes: placed},
		{Id: aws.String("2"), Message: aws.String("batch none")},
	}})
	if err != nil || len(batch.Successful) != 2 {
		t.Fatalf("PublishBatch: %v, %+v", err, batch)
	}

	if got, want := drainBodies(t, srv.Client, attrQ), sorted("placed, 210.75", `{"order": {"store": ["other", "example_shop"]}}`, "batch placed"); !slices.Equal(got, want) {
		t.Errorf("attribute-filtered queue holds %q, want %q", got, want)
	}
	if got, want := drainBodies(t, srv.Client, bodyQ), sorted(`{"order": {"store": "example_corp"}}`, `{"order": {"store": ["other", "example_shop"]}}`); !slices.Equal(got, want) {
		t.Errorf("body-filtered queue holds %q, want %q", got, want)
	}

	mustSetSubAttr(t, c, attrSub, "FilterPolicy", "")
	publish("unfiltered", nil)
	if got := drainBodies(t, srv.Client, attrQ); !slices.Equal(got, []string{"unfiltered"}) {
		t.Errorf("after FilterPolicy \"\" the queue holds %q, want [unfiltered]", got)
	}
	if got := drainBodies(t, srv.Client, bodyQ); len(got) != 0 {
		t.Errorf("body-filtered queue holds %q, want nothing", got)
	}
}

// TestSNSFilterPolicyAttributes pins what Get/SetSubscriptionAttributes
// show of the filter attributes, as recorded on AWS: FilterPolicyScope only
// beside a FilterPolicy (MessageAttributes when never set), the policy as
// sent, "" removing it; a nested policy only in the MessageBody scope, and
// a scope change the policy set does not hold under refused; Subscribe
// again with the default scope restated is the same subscription.
func TestSNSFilterPolicyAttributes(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "filters")
	arn := mustSubscribe(t, c, topic, snsQueueARN("q"), nil)
	filterAttrs := func() (policy, scope string, hasPolicy, hasScope bool) {
		a := subAttrs(t, c, arn)
		policy, hasPolicy = a["FilterPolicy"]
		scope, hasScope = a["FilterPolicyScope"]
		return
	}
	if _, _, p, s := filterAttrs(); p || s {
		t.Errorf("a new subscription shows FilterPolicy %v, FilterPolicyScope %v; want neither", p, s)
	}
	mustSetSubAttr(t, c, arn, "FilterPolicyScope", "MessageBody")
	if _, _, p, s := filterAttrs(); p || s {
		t.Errorf("with a scope and no policy: FilterPolicy %v, FilterPolicyScope %v shown; want neither", p, s)
	}
	wantSNSError(t, setSubAttr(c, arn, "FilterPolicyScope", "RandomValue"), "InvalidParameter", 400,
		"Invalid parameter: FilterPolicyScope: Invalid value [RandomValue]. Please use either MessageBody or MessageAttributes")

	const nested = `{"object": {"key": [{"prefix": "auto-"}]}}`
	mustSetSubAttr(t, c, arn, "FilterPolicy", nested)
	if policy, scope, _, _ := filterAttrs(); policy != nested || scope != "MessageBody" {
		t.Errorf("FilterPolicy %q, FilterPolicyScope %q; want %q, MessageBody", policy, scope, nested)
	}
	wantSNSError(t, setSubAttr(c, arn, "FilterPolicyScope", "MessageAttributes"), "InvalidParameter", 400,
		"Invalid parameter: Filter policy scope MessageAttributes does not support nested filter policy")
	if _, scope, _, _ := filterAttrs(); scope != "MessageBody" {
		t.Errorf("a refused scope change left FilterPolicyScope %q", scope)
	}
	mustSetSubAttr(t, c, arn, "FilterPolicy", "")
	if _, _, p, s := filterAttrs(); p || s {
		t.Errorf("after FilterPolicy \"\": FilterPolicy %v, FilterPolicyScope %v shown; want neither", p, s)
	}

	other := mustSubscribe(t, c, topic, snsQueueARN("q2"), nil)
	wantSNSError(t, setSubAttr(c, other, "FilterPolicy", nested), "InvalidParameter", 400,
		"Invalid parameter: Filter policy scope MessageAttributes does not support nested filter policy")
	const flat = `{"attr1": [{"numeric": [">", 0, "<=", 100]}]}`
	mustSetSubAttr(t, c, other, "FilterPolicy", flat)
	if a := subAttrs(t, c, other); a["FilterPolicy"] != flat || a["FilterPolicyScope"] != "MessageAttributes" {
		t.Errorf("FilterPolicy %q, FilterPolicyScope %q; want %q, MessageAttributes", a["FilterPolicy"], a["FilterPolicyScope"], flat)
	}
	if again := mustSubscribe(t, c, topic, snsQueueARN("q2"), map[string]string{"FilterPolicy": flat, "FilterPolicyScope": "MessageAttributes"}); again != other {
		t.Errorf("Subscribe again restating the default scope = %q, want %q", again, other)
	}
	_, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
		Endpoint: aws.String(snsQueueARN("q2")), Attributes: map[string]string{"FilterPolicy": `{"attr1": [1]}`}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Attributes Reason: Subscription already exists with different attributes")

	body := mustSubscribe(t, c, topic, snsQueueARN("q3"), map[string]string{"FilterPolicy": nested, "FilterPolicyScope": "MessageBody"})
	if a := subAttrs(t, c, body); a["FilterPolicy"] != nested || a["FilterPolicyScope"] != "MessageBody" {
		t.Errorf("subscribed with a body policy: FilterPolicy %q, FilterPolicyScope %q", a["FilterPolicy"], a["FilterPolicyScope"])
	}
}

// TestSNSFilterPolicyRefusals: invalid policies, on Subscribe and on
// SetSubscriptionAttributes, get InvalidParameter 400 with AWS's texts
// (as recorded on AWS, without the parser location AWS appends after a
// line break), never a server error.
func TestSNSFilterPolicyRefusals(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "refused-filters")
	arn := mustSubscribe(t, c, topic, snsQueueARN("q"), nil)
	many := `{"key": ["v0"` + strings.Repeat(`,"v"`, 150) + `]}`
	for _, tc := range []struct{ policy, msg string }{
		{`{"key":[["value"]]}`, "FilterPolicy: Match value must be String, number, true, false, or null"},
		{`{"key":[{"wrong-operator":true}]}`, "FilterPolicy: Unrecognized match type wrong-operator"},
		{`{"key":[{"numeric":[">",3,"<",1]}]}`, "FilterPolicy: Bottom must be less than top"},
		{`{"key":[{"anything-but":{"suffix":"test"}}]}`, "FilterPolicy: Unsupported anything-but pattern: suffix"},
		{`{"key":[{"exists":"no"}]}`, "FilterPolicy: exists match pattern must be either true or false."},
		{many, "FilterPolicy: Filter policy is too complex"},
		{`{"k1":["v"],"k2":["v"],"k3":["v"],"k4":["v"],"k5":["v"],"k6":["v"]}`, "FilterPolicy: Filter policy can not have more than 5 keys"},
		{`{"key_a":"value_one"}`, `FilterPolicy: "key_a" must be an object or an array`},
	} {
		wantSNSError(t, setSubAttr(c, arn, "FilterPolicy", tc.policy), "InvalidParameter", 400, "Invalid parameter: "+tc.msg)
		_, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
			Endpoint: aws.String(snsQueueARN("other")), Attributes: map[string]string{"FilterPolicy": tc.policy}})
		wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Attributes Reason: "+tc.msg)
	}
	err := setSubAttr(c, arn, "FilterPolicy", "{invalidjson}")
	wantAPIError(t, err, "InvalidParameter", 400)
	if err == nil || !strings.Contains(err.Error(), "Invalid parameter: FilterPolicy: failed to parse JSON.") {
		t.Errorf("invalid JSON: %v, want \"Invalid parameter: FilterPolicy: failed to parse JSON. …\"", err)
	}
	if _, has := subAttrs(t, c, arn)["FilterPolicy"]; has {
		t.Error("a refused policy was kept")
	}
}

// TestSNSFilterPolicySurvivesRestart: on the embedded store a
// subscription's policy and scope outlive the server and still filter.
func TestSNSFilterPolicySurvivesRestart(t *testing.T) {
	t.Parallel()
	dir, ctx := t.TempDir(), context.Background()
	start := func() *batontest.Server { return startEmbedded(t, dir) }
	srv := start()
	q, err := srv.Client().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("kept")})
	if err != nil {
		t.Fatal(err)
	}
	topic := mustCreateTopic(t, srv.SNSClient(), "kept")
	const policy = `{"kind": [{"equals-ignore-case": "WANTED"}]}`
	arn := mustSubscribe(t, srv.SNSClient(), topic, snsQueueARN("kept"),
		map[string]string{"RawMessageDelivery": "true", "FilterPolicyScope": "MessageBody", "FilterPolicy": policy})
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	srv = start()
	defer srv.Close()
	c := srv.SNSClient()
	if a := subAttrs(t, c, arn); a["FilterPolicy"] != policy || a["FilterPolicyScope"] != "MessageBody" {
		t.Errorf("after restart: FilterPolicy %q, FilterPolicyScope %q", a["FilterPolicy"], a["FilterPolicyScope"])
	}
	for _, m := range []string{`{"kind": "Wanted"}`, `{"kind": "other"}`} {
		if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(m)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := drainBodies(t, srv.Client(), *q.QueueUrl); !slices.Equal(got, []string{`{"kind": "Wanted"}`}) {
		t.Errorf("after restart the queue holds %q, want only the matching publish", got)
	}
}
