package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/sns"
)

// snsAllows is the queue policy AWS's documentation gives for letting a
// topic send to a queue ("Configuring an Amazon SNS dead-letter queue for
// a subscription", Amazon SNS Developer Guide): the service principal,
// SQS:SendMessage on the queue, on condition that aws:SourceArn is the
// topic.
func snsAllows(queueARN, topicARN string) string {
	return `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},` +
		`"Action":"SQS:SendMessage","Resource":"` + queueARN + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topicARN + `"}}}]}`
}

// policyServer is a server with --sns-queue-policies mode, a topic
// "orders" and a queue "q" subscribed to it with attrs, whose Policy is
// policy (none if "").
func policyServer(t *testing.T, mode sns.QueuePolicyMode, policy func(queueARN, topicARN string) string, attrs map[string]string) (srv *testutil.Server, topic, qURL string) {
	t.Helper()
	srv = testutil.StartServer(t, testutil.Options{SNSQueuePolicies: mode})
	topic = mustCreateTopic(t, srv.SNSClient(), "orders")
	var qa map[string]string
	if policy != nil {
		qa = map[string]string{"Policy": policy(snsQueueARN("q"), topic)}
	}
	qURL = srv.MustCreateQueue(t, "q", qa)
	mustSubscribe(t, srv.SNSClient(), topic, snsQueueARN("q"), attrs)
	return srv, topic, qURL
}

// publishOne publishes one message to topic.
func publishOne(t *testing.T, srv *testutil.Server, topic string) string {
	t.Helper()
	out, err := srv.SNSClient().Publish(context.Background(), &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("paid")})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return *out.MessageId
}

// queueHolds says how many messages a queue holds (visible ones).
func queueHolds(t *testing.T, srv *testutil.Server, qURL string) int {
	t.Helper()
	out, err := srv.Client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(qURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := json.Unmarshal([]byte(out.Attributes["ApproximateNumberOfMessages"]), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// topicsView reads GET /admin/api/topics.
func topicsView(t *testing.T, srv *testutil.Server) server.TopicListJSON {
	t.Helper()
	code, _, body := fetch(t, "GET", srv.URL+"/admin/api/topics", nil, "")
	var v server.TopicListJSON
	if code != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("GET /admin/api/topics: %d %s", code, body)
	}
	return v
}

// onlyOutcome is the one outcome of the newest publish.
func onlyOutcome(t *testing.T, v server.TopicListJSON, messageID string) server.OutcomeJSON {
	t.Helper()
	if len(v.Recent) == 0 || v.Recent[0].MessageID != messageID || len(v.Recent[0].Outcomes) != 1 {
		t.Fatalf("recent publishes = %+v, want %s with one outcome", v.Recent, messageID)
	}
	return v.Recent[0].Outcomes[0]
}

// TestSNSQueuePolicyEnforce: with --sns-queue-policies enforce, a copy
// reaches the queue only if the queue's Policy lets the topic send, as on
// AWS: no policy, a Deny, or a condition naming another topic keeps it out
// (failed, and counted in baton_sns_failed_total), AWS's own example
// policy lets it in.
func TestSNSQueuePolicyEnforce(t *testing.T) {
	t.Parallel()
	denyAll := func(q, topic string) string {
		return `{"Version":"2012-10-17","Statement":[` + strings.TrimSuffix(strings.TrimPrefix(snsAllows(q, topic), `{"Version":"2012-10-17","Statement":[`), `]}`) +
			`,{"Sid":"NoSNS","Effect":"Deny","Principal":"*","Action":"sqs:*","Resource":"` + q + `"}]}`
	}
	otherTopic := func(q, _ string) string {
		return snsAllows(q, "arn:aws:sns:us-east-1:"+testutil.Account+":other")
	}
	tests := []struct {
		name      string
		policy    func(q, topic string) string
		delivered bool
		reason    string
	}{
		{"no policy", nil, false, "the queue has no Policy"},
		{"AWS's example policy", snsAllows, true, ""},
		{"an explicit Deny beside it", denyAll, false, `the queue's Policy denies it (statement "NoSNS")`},
		{"aws:SourceArn of another topic", otherTopic, false, "the queue's Policy does not allow sns.amazonaws.com to sqs:SendMessage for this topic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, topic, qURL := policyServer(t, sns.QueuePoliciesEnforce, tc.policy, nil)
			id := publishOne(t, srv, topic)
			want := 0
			if tc.delivered {
				want = 1
			}
			if got := queueHolds(t, srv, qURL); got != want {
				t.Errorf("the queue holds %d messages, want %d", got, want)
			}
			o := onlyOutcome(t, topicsView(t, srv), id)
			switch {
			case tc.delivered && (o.Outcome != "delivered" || o.Warning != ""):
				t.Errorf("outcome = %+v, want delivered without a warning", o)
			case !tc.delivered && (o.Outcome != "failed" || !strings.Contains(o.Reason, tc.reason)):
				t.Errorf("outcome = %+v, want failed: %s", o, tc.reason)
			}
			failed := 1.0
			if tc.delivered {
				failed = 0
			}
			labels := map[string]string{"account": testutil.Account, "topic": "orders", "region": "us-east-1"}
			if got := value(t, scrape(t, srv.URL), "baton_sns_failed_total", labels).GetCounter().GetValue(); got != failed {
				t.Errorf("baton_sns_failed_total = %v, want %v", got, failed)
			}
		})
	}
}

// TestSNSQueuePolicyEnforceDeadLetter: a copy the queue's Policy refuses
// is AWS's client-side error: it goes to the subscription's dead-letter
// queue, whose own Policy lets the topic send there; a dead-letter queue
// whose Policy does not gets nothing either.
func TestSNSQueuePolicyEnforceDeadLetter(t *testing.T) {
	t.Parallel()
	redrive := map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + snsQueueARN("q-dlq") + `"}`}
	for _, dlqAllows := range []bool{true, false} {
		srv := testutil.StartServer(t, testutil.Options{SNSQueuePolicies: sns.QueuePoliciesEnforce})
		topic := mustCreateTopic(t, srv.SNSClient(), "orders")
		var dlqAttrs map[string]string
		if dlqAllows {
			dlqAttrs = map[string]string{"Policy": snsAllows(snsQueueARN("q-dlq"), topic)}
		}
		dlq := srv.MustCreateQueue(t, "q-dlq", dlqAttrs)
		qURL := srv.MustCreateQueue(t, "q", nil)
		mustSubscribe(t, srv.SNSClient(), topic, snsQueueARN("q"), redrive)
		id := publishOne(t, srv, topic)
		if got := queueHolds(t, srv, qURL); got != 0 {
			t.Errorf("dead-letter queue allowing %v: the queue holds %d messages, want 0", dlqAllows, got)
		}
		if !dlqAllows {
			if got := queueHolds(t, srv, dlq); got != 0 {
				t.Errorf("the dead-letter queue, whose Policy does not allow the topic, holds %d messages, want 0", got)
			}
			continue
		}
		m := receiveCopy(t, srv.Client, dlq)
		var env struct{ MessageId, TopicArn, Message string }
		if err := json.Unmarshal([]byte(*m.Body), &env); err != nil || env.MessageId != id || env.TopicArn != topic || env.Message != "paid" {
			t.Errorf("the dead-letter queue's copy = %s, want the envelope of %s", *m.Body, id)
		}
	}
}

// TestSNSQueuePolicyWarn: by default (warn) a copy the queue's Policy
// would keep out on AWS is delivered all the same, and the publish's
// record and the Topics page say that AWS would not deliver it; AWS's
// GetSubscriptionAttributes carries nothing of it. A queue whose Policy
// allows the topic gets no note, and with the mode off no queue does.
func TestSNSQueuePolicyWarn(t *testing.T) {
	t.Parallel()
	srv, topic, qURL := policyServer(t, sns.QueuePoliciesWarn, nil, nil)
	id := publishOne(t, srv, topic)
	if got := queueHolds(t, srv, qURL); got != 1 {
		t.Fatalf("the queue holds %d messages, want 1: warn delivers", got)
	}
	v := topicsView(t, srv)
	o := onlyOutcome(t, v, id)
	if o.Outcome != "delivered" || !strings.HasPrefix(o.Warning, "AWS would not deliver this copy: the queue has no Policy") {
		t.Errorf("outcome = %+v, want delivered with the warning that AWS would not deliver it", o)
	}
	if subs := v.Topics[0].Subscriptions; len(subs) != 1 || !strings.HasPrefix(subs[0].QueuePolicy, "AWS would not deliver its copies: the queue has no Policy") {
		t.Errorf("the topic's subscriptions = %+v, want the queue-policy note", subs)
	}
	subARN := v.Topics[0].Subscriptions[0].ARN
	attrs, err := srv.SNSClient().GetSubscriptionAttributes(context.Background(), &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(subARN)})
	if err != nil {
		t.Fatal(err)
	}
	for k, val := range attrs.Attributes {
		if strings.Contains(val, "AWS would not") || strings.Contains(strings.ToLower(k), "queuepolicy") {
			t.Errorf("GetSubscriptionAttributes carries %s=%s: Baton's note is not AWS's", k, val)
		}
	}

	// Once the queue allows the topic, the notes go.
	if _, err := srv.Client.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(qURL),
		Attributes: map[string]string{"Policy": snsAllows(snsQueueARN("q"), topic)}}); err != nil {
		t.Fatal(err)
	}
	id = publishOne(t, srv, topic)
	v = topicsView(t, srv)
	if o := onlyOutcome(t, v, id); o.Outcome != "delivered" || o.Warning != "" {
		t.Errorf("outcome with the policy = %+v, want delivered, no warning", o)
	}
	if note := v.Topics[0].Subscriptions[0].QueuePolicy; note != "" {
		t.Errorf("the subscription's note with the policy = %q, want none", note)
	}

	off, offTopic, offURL := policyServer(t, sns.QueuePoliciesOff, nil, nil)
	id = publishOne(t, off, offTopic)
	v = topicsView(t, off)
	if o := onlyOutcome(t, v, id); o.Outcome != "delivered" || o.Warning != "" || v.Topics[0].Subscriptions[0].QueuePolicy != "" {
		t.Errorf("mode off: outcome %+v, subscription %+v, want delivered and no note", o, v.Topics[0].Subscriptions[0])
	}
	if got := queueHolds(t, off, offURL); got != 1 {
		t.Errorf("mode off: the queue holds %d messages, want 1", got)
	}
}

// TestSNSQueuePolicyUndecided: a policy whose answer hangs on what Baton
// does not evaluate (here a condition on the caller's IP address) is not
// refused, even in enforce mode: the copy is delivered with the note that
// Baton cannot tell.
func TestSNSQueuePolicyUndecided(t *testing.T) {
	t.Parallel()
	byIP := func(q, _ string) string {
		return `{"Statement":[{"Sid":"FromMyNet","Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + q + `",` +
			`"Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"}}}]}`
	}
	srv, topic, qURL := policyServer(t, sns.QueuePoliciesEnforce, byIP, nil)
	id := publishOne(t, srv, topic)
	if got := queueHolds(t, srv, qURL); got != 1 {
		t.Errorf("the queue holds %d messages, want 1", got)
	}
	want := "Baton cannot tell whether AWS would deliver this copy: the queue's Policy, FromMyNet: its condition operator IpAddress is one Baton does not evaluate"
	if o := onlyOutcome(t, topicsView(t, srv), id); o.Outcome != "delivered" || o.Warning != want {
		t.Errorf("outcome = %+v, want delivered with the warning %q", o, want)
	}
}
