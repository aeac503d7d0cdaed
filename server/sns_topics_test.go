package server_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// wantSNSError checks that err is an SNS error with the code, HTTP status
// and message AWS answers.
func wantSNSError(tb testing.TB, err error, code string, status int, msg string) {
	tb.Helper()
	wantAPIError(tb, err, code, status)
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorMessage() != msg {
		tb.Errorf("message = %q, want %q", ae.ErrorMessage(), msg)
	}
}

func topicARN(name string) string { return "arn:aws:sns:us-east-1:" + testutil.Account + ":" + name }

func mustCreateTopic(tb testing.TB, c *awssns.Client, name string) string {
	tb.Helper()
	out, err := c.CreateTopic(context.Background(), &awssns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		tb.Fatalf("CreateTopic %s: %v", name, err)
	}
	return *out.TopicArn
}

// TestSNSCreateTopicIdempotent pins CreateTopic's idempotency as AWS
// recorded it: the same name gives the same ARN when every attribute and
// tag given matches the topic's; an attribute never set counts as
// different, FifoTopic=false on a standard topic as the same.
func TestSNSCreateTopicIdempotent(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	out, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("orders"),
		Attributes: map[string]string{"DisplayName": "Orders"},
		Tags:       []snstypes.Tag{{Key: aws.String("team"), Value: aws.String("a")}, {Key: aws.String("env"), Value: aws.String("dev")}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := *out.TopicArn, topicARN("orders"); got != want {
		t.Fatalf("TopicArn = %q, want %q", got, want)
	}
	same := []*awssns.CreateTopicInput{
		{Name: aws.String("orders")},
		{Name: aws.String("orders"), Attributes: map[string]string{"DisplayName": "Orders"}},
		{Name: aws.String("orders"), Attributes: map[string]string{"FifoTopic": "false"}},
		{Name: aws.String("orders"), Tags: []snstypes.Tag{{Key: aws.String("env"), Value: aws.String("dev")}}},
	}
	for _, in := range same {
		out, err := c.CreateTopic(ctx, in)
		if err != nil {
			t.Errorf("CreateTopic(%v, %v) again: %v", in.Attributes, in.Tags, err)
			continue
		}
		if *out.TopicArn != topicARN("orders") {
			t.Errorf("TopicArn = %q, want the first one", *out.TopicArn)
		}
	}
	for _, tc := range []struct {
		in  *awssns.CreateTopicInput
		msg string
	}{
		{&awssns.CreateTopicInput{Name: aws.String("orders"), Attributes: map[string]string{"DisplayName": "Other"}},
			"Invalid parameter: Attributes Reason: Topic already exists with different attributes"},
		{&awssns.CreateTopicInput{Name: aws.String("orders"), Attributes: map[string]string{"SignatureVersion": "2"}},
			"Invalid parameter: Attributes Reason: Topic already exists with different attributes"},
		{&awssns.CreateTopicInput{Name: aws.String("orders"), Tags: []snstypes.Tag{{Key: aws.String("new"), Value: aws.String("x")}}},
			"Invalid parameter: Tags Reason: Topic already exists with different tags"},
	} {
		_, err := c.CreateTopic(ctx, tc.in)
		wantSNSError(t, err, "InvalidParameter", 400, tc.msg)
	}
}

// TestSNSCreateTopicNames pins the names AWS refuses, all with "Invalid
// parameter: Topic Name".
func TestSNSCreateTopicNames(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	for _, name := range []string{"", strings.Repeat("a", 257), "a:b", "a;b", "a!b", "a@b", "a|b", "a^b", "a%b", "a b", "a.fifo"} {
		_, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String(name)})
		wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Topic Name")
	}
	_, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("plain"), Attributes: map[string]string{"FifoTopic": "true"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Topic Name")
	if _, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String(strings.Repeat("a", 256))}); err != nil {
		t.Errorf("a name of 256 characters: %v", err)
	}
	if _, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("A-z_0-9")}); err != nil {
		t.Errorf("A-z_0-9: %v", err)
	}
}

// TestSNSTopicAttributes pins what GetTopicAttributes returns for a new
// standard topic (exactly AWS's members), that SetTopicAttributes changes
// one, and AWS's refusals.
func TestSNSTopicAttributes(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	arn := mustCreateTopic(t, c, "attrs")
	out, err := c.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DisplayName", "EffectiveDeliveryPolicy", "Owner", "Policy", "SubscriptionsConfirmed", "SubscriptionsDeleted",
		"SubscriptionsPending", "TopicArn"}
	if got := slices.Sorted(maps.Keys(out.Attributes)); !slices.Equal(got, want) {
		t.Errorf("attributes %v, want %v", got, want)
	}
	for k, v := range map[string]string{"TopicArn": arn, "Owner": testutil.Account, "DisplayName": "", "SubscriptionsConfirmed": "0",
		"Policy": `{"Version":"2008-10-17","Id":"__default_policy_ID","Statement":[{"Sid":"__default_statement_ID","Effect":"Allow","Principal":{"AWS":"*"},"Action":["SNS:GetTopicAttributes","SNS:SetTopicAttributes","SNS:AddPermission","SNS:RemovePermission","SNS:DeleteTopic","SNS:Subscribe","SNS:ListSubscriptionsByTopic","SNS:Publish"],"Resource":"` + arn + `","Condition":{"StringEquals":{"AWS:SourceOwner":"` + testutil.Account + `"}}}]}`,
	} {
		if out.Attributes[k] != v {
			t.Errorf("%s = %q, want %q", k, out.Attributes[k], v)
		}
	}
	if _, err := c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(arn),
		AttributeName: aws.String("DisplayName"), AttributeValue: aws.String("Shown")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(arn),
		AttributeName: aws.String("SignatureVersion"), AttributeValue: aws.String("2")}); err != nil {
		t.Fatal(err)
	}
	out, err = c.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Attributes["DisplayName"] != "Shown" || out.Attributes["SignatureVersion"] != "2" {
		t.Errorf("after SetTopicAttributes: DisplayName %q, SignatureVersion %q", out.Attributes["DisplayName"], out.Attributes["SignatureVersion"])
	}
	for _, name := range []string{"FifoTopic", "Bogus"} {
		_, err := c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(arn),
			AttributeName: aws.String(name), AttributeValue: aws.String("true")})
		wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: AttributeName")
	}
	_, err = c.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String(topicARN("missing"))})
	wantSNSError(t, err, "NotFound", 404, "Topic does not exist")
	var nf *snstypes.NotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("the SDK's error is %T, want *types.NotFoundException", err)
	}
	_, err = c.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String("arn:aws:sns:us-east-1")})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: TopicArn Reason: An ARN must have at least 6 elements, not 4")
	_, err = c.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String("arn:aws:sns:eu-west-1:" + testutil.Account + ":attrs")})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: TopicArn")
}

// TestSNSDeleteTopic: a deleted topic is gone with its subscriptions;
// deleting it again succeeds, as on AWS.
func TestSNSDeleteTopic(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	arn := mustCreateTopic(t, c, "gone")
	mustSubscribe(t, c, arn, snsQueueARN("q"), nil)
	for range 2 {
		if _, err := c.DeleteTopic(ctx, &awssns.DeleteTopicInput{TopicArn: aws.String(arn)}); err != nil {
			t.Fatalf("DeleteTopic: %v", err)
		}
	}
	_, err := c.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String(arn)})
	wantSNSError(t, err, "NotFound", 404, "Topic does not exist")
	subs, err := c.ListSubscriptions(ctx, &awssns.ListSubscriptionsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(subs.Subscriptions) != 0 {
		t.Errorf("subscriptions after DeleteTopic: %d, want 0", len(subs.Subscriptions))
	}
}

// TestSNSListTopicsPages: 100 topics a page, a NextToken only when more
// remain.
func TestSNSListTopicsPages(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	var want []string
	for i := range 101 {
		want = append(want, mustCreateTopic(t, c, fmt.Sprintf("t%03d", i)))
	}
	first, err := c.ListTopics(ctx, &awssns.ListTopicsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Topics) != 100 || first.NextToken == nil {
		t.Fatalf("first page: %d topics, token %v; want 100 and a token", len(first.Topics), first.NextToken)
	}
	second, err := c.ListTopics(ctx, &awssns.ListTopicsInput{NextToken: first.NextToken})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Topics) != 1 || second.NextToken != nil {
		t.Fatalf("second page: %d topics, token %v; want 1 and none", len(second.Topics), second.NextToken)
	}
	var got []string
	for _, tp := range append(first.Topics, second.Topics...) {
		got = append(got, *tp.TopicArn)
	}
	if !slices.Equal(got, want) {
		t.Errorf("topics listed %d, not the %d created in name order", len(got), len(want))
	}
}

// TestSNSListGarbageNextToken: ListTopics, ListSubscriptions and
// ListSubscriptionsByTopic refuse alike a NextToken they did not make,
// whether it is not base64 or decodes to no position of the list
// (InvalidParameter "Invalid parameter: NextToken"; AWS's answer is not
// known). ListTopics read a decodable one as a position past its last
// topic and answered an empty page, where ListSubscriptions refused it.
func TestSNSListGarbageNextToken(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "orders")
	srv.MustCreateQueue(t, "q", nil)
	mustSubscribe(t, c, topic, snsQueueARN("q"), nil)
	for _, token := range []string{"garbage", "!!not-base64!!", "b3JkZXJz"} { // the last is "orders" alone
		_, err := c.ListTopics(ctx, &awssns.ListTopicsInput{NextToken: aws.String(token)})
		if token == "b3JkZXJz" { // a topic's name: a position of ListTopics
			if err != nil {
				t.Errorf("ListTopics after a topic's name: %v", err)
			}
		} else {
			wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: NextToken")
		}
		_, err = c.ListSubscriptions(ctx, &awssns.ListSubscriptionsInput{NextToken: aws.String(token)})
		wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: NextToken")
		_, err = c.ListSubscriptionsByTopic(ctx, &awssns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic), NextToken: aws.String(token)})
		wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: NextToken")
	}
}

// hiddenTopics is a store that keeps no topics, as the PostgreSQL store
// does not yet.
type hiddenTopics struct{ baton.Store }

// TestSNSNeedsATopicStore: over a store that keeps no topics the server
// answers SNS actions as actions it does not have, as before SNS was
// served.
func TestSNSNeedsATopicStore(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t, testutil.Options{Store: hiddenTopics{memstore.New()}})
	_, err := srv.SNSClient().CreateTopic(context.Background(), &awssns.CreateTopicInput{Name: aws.String("t")})
	wantAPIError(t, err, "InvalidAction", 400)
}
