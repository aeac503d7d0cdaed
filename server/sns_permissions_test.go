package server_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// defaultTopicPolicy is the Policy AWS gives a new topic (recorded).
func defaultTopicPolicy(topic string) string {
	return `{"Version":"2008-10-17","Id":"__default_policy_ID","Statement":[{"Sid":"__default_statement_ID","Effect":"Allow",` +
		`"Principal":{"AWS":"*"},"Action":["SNS:GetTopicAttributes","SNS:SetTopicAttributes","SNS:AddPermission",` +
		`"SNS:RemovePermission","SNS:DeleteTopic","SNS:Subscribe","SNS:ListSubscriptionsByTopic","SNS:Publish"],` +
		`"Resource":"` + topic + `","Condition":{"StringEquals":{"AWS:SourceOwner":"` + testutil.Account + `"}}}]}`
}

// TestSNSPermissions pins AddPermission and RemovePermission as AWS
// answers them: a statement per label, Sid = Label, each account's root
// as principal, the actions prefixed "SNS:" (a string when one, a list
// when several), appended to the topic's Policy after the default
// statement and removed by label, which leaves the default; a label
// reused, an action no topic has and an unknown topic refused with AWS's
// codes and texts.
func TestSNSPermissions(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "shared")
	policy := func() string {
		t.Helper()
		out, err := c.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String(topic)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes["Policy"]
	}
	def := defaultTopicPolicy(topic)
	one := `{"Sid":"one","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:root"},"Action":"SNS:Publish","Resource":"` + topic + `"}`
	two := `{"Sid":"two","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::111122223333:root","arn:aws:iam::444455556666:root"]},` +
		`"Action":["SNS:Subscribe","SNS:GetTopicAttributes"],"Resource":"` + topic + `"}`
	with := func(sts ...string) string {
		return strings.TrimSuffix(def, "]}") + "," + strings.Join(sts, ",") + "]}"
	}
	if _, err := c.AddPermission(ctx, &awssns.AddPermissionInput{TopicArn: aws.String(topic), Label: aws.String("one"),
		AWSAccountId: []string{"111122223333"}, ActionName: []string{"Publish"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddPermission(ctx, &awssns.AddPermissionInput{TopicArn: aws.String(topic), Label: aws.String("two"),
		AWSAccountId: []string{"111122223333", "444455556666"}, ActionName: []string{"Subscribe", "GetTopicAttributes"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := policy(), with(one, two); got != want {
		t.Errorf("Policy:\n%s\nwant:\n%s", got, want)
	}

	_, err := c.AddPermission(ctx, &awssns.AddPermissionInput{TopicArn: aws.String(topic), Label: aws.String("one"),
		AWSAccountId: []string{"999999999999"}, ActionName: []string{"AddPermission"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Statement already exists")
	for _, action := range []string{"NotExistingAction", "*", "CreateTopic", "SNS:Publish"} {
		_, err = c.AddPermission(ctx, &awssns.AddPermissionInput{TopicArn: aws.String(topic), Label: aws.String("three"),
			AWSAccountId: []string{"999999999999"}, ActionName: []string{action}})
		wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Policy statement action out of service scope!")
	}
	_, err = c.AddPermission(ctx, &awssns.AddPermissionInput{TopicArn: aws.String(topicARN("missing")), Label: aws.String("x"),
		AWSAccountId: []string{"999999999999"}, ActionName: []string{"Publish"}})
	wantSNSError(t, err, "NotFound", 404, "Topic does not exist")
	_, err = c.RemovePermission(ctx, &awssns.RemovePermissionInput{TopicArn: aws.String(topicARN("missing")), Label: aws.String("x")})
	wantSNSError(t, err, "NotFound", 404, "Topic does not exist")

	if _, err := c.RemovePermission(ctx, &awssns.RemovePermissionInput{TopicArn: aws.String(topic), Label: aws.String("one")}); err != nil {
		t.Fatal(err)
	}
	if got, want := policy(), with(two); got != want {
		t.Errorf("Policy after removing one:\n%s\nwant:\n%s", got, want)
	}
	// A label no statement has: Baton's choice, AWS's answer unknown.
	if _, err := c.RemovePermission(ctx, &awssns.RemovePermissionInput{TopicArn: aws.String(topic), Label: aws.String("never")}); err != nil {
		t.Errorf("RemovePermission of an unknown label: %v", err)
	}
	if _, err := c.RemovePermission(ctx, &awssns.RemovePermissionInput{TopicArn: aws.String(topic), Label: aws.String("two")}); err != nil {
		t.Fatal(err)
	}
	if got := policy(); got != def {
		t.Errorf("Policy after removing both:\n%s\nwant the default:\n%s", got, def)
	}
}

// TestSNSPermissionsRouting: AddPermission is an action of SQS and of
// SNS. An unsigned Query request without a Version is SNS's when it names
// a TopicArn, and SQS's when it names a queue.
func TestSNSPermissionsRouting(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	topic := mustCreateTopic(t, srv.SNSClient(), "routed")
	qURL := srv.MustCreateQueue(t, "routed", nil)
	post := func(form url.Values) (int, string) {
		t.Helper()
		resp, err := http.PostForm(srv.URL+"/", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post(url.Values{"Action": {"AddPermission"}, "TopicArn": {topic}, "Label": {"l"},
		"AWSAccountId.member.1": {"111122223333"}, "ActionName.member.1": {"Publish"}})
	if status != 200 || !strings.Contains(body, `<AddPermissionResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">`) {
		t.Errorf("SNS AddPermission: %d %s", status, body)
	}
	status, body = post(url.Values{"Action": {"AddPermission"}, "QueueUrl": {qURL}, "Label": {"l"},
		"AWSAccountId.1": {"111122223333"}, "ActionName.1": {"SendMessage"}})
	if status != 200 || !strings.Contains(body, "<AddPermissionResponse") || strings.Contains(body, "sns.amazonaws.com") {
		t.Errorf("SQS AddPermission: %d %s", status, body)
	}
}

// TestSNSTopicPolicyNotEvaluated pins what Baton does with a topic's
// Policy, which it keeps and does not evaluate (docs/sns.md, "Topic
// permissions"): a key acts for its own account alone, so another
// account's Publish is answered NotFound "Topic does not exist" even when
// AddPermission granted it SNS:Publish (AWS would take it), and the
// owner's Publish is taken even when the Policy denies it SNS:Publish
// (AWS would answer AuthorizationError).
func TestSNSTopicPolicyNotEvaluated(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{
		{AccessKeyID: "AKIDALICE", SecretAccessKey: "alice-secret", Account: "111111111111"},
		{AccessKeyID: "AKIDBOB", SecretAccessKey: "bob-secret", Account: "222222222222"},
	}})
	ctx := context.Background()
	alice, bob := srv.SNSClient(), srv.SNSClientFor("AKIDBOB", "bob-secret")
	topic := mustCreateTopic(t, alice, "shared")
	if _, err := alice.AddPermission(ctx, &awssns.AddPermissionInput{TopicArn: aws.String(topic), Label: aws.String("bob"),
		AWSAccountId: []string{"222222222222"}, ActionName: []string{"Publish"}}); err != nil {
		t.Fatal(err)
	}
	_, err := bob.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("from bob")})
	wantSNSError(t, err, "NotFound", 404, "Topic does not exist")

	deny := `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":{"AWS":"*"},"Action":"SNS:Publish","Resource":"` + topic + `"}]}`
	if _, err := alice.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(topic),
		AttributeName: aws.String("Policy"), AttributeValue: aws.String(deny)}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("from alice")}); err != nil {
		t.Errorf("the owner's Publish under a Policy denying it: %v, want it taken (Baton does not evaluate the Policy)", err)
	}
}
