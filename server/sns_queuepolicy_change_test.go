package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/sns"
)

// TestSNSQueuePolicyChangeTakesEffect: the fan-out keeps each queue
// Policy's answer, but a Policy changed by SetQueueAttributes, cleared, or
// belonging to a queue deleted and made again holds from the very next
// publish, in enforce mode (the copy is refused or delivered) as in warn
// mode (the warning comes and goes).
func TestSNSQueuePolicyChangeTakesEffect(t *testing.T) {
	t.Parallel()
	otherTopic := func(q, _ string) string { return snsAllows(q, "arn:aws:sns:us-east-1:"+testutil.Account+":other") }
	none := func(string, string) string { return "" }
	for _, mode := range []sns.QueuePolicyMode{sns.QueuePoliciesEnforce, sns.QueuePoliciesWarn} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			srv, topic, qURL := policyServer(t, mode, snsAllows, nil)
			ctx := context.Background()
			// check publishes once and wants the copy let through by the
			// Policy (allowed) or not: in enforce mode refused, in warn
			// mode delivered with AWS's refusal noted.
			check := func(step string, allowed bool) {
				t.Helper()
				before := queueHolds(t, srv, qURL)
				id := publishOne(t, srv, topic)
				o := onlyOutcome(t, topicsView(t, srv), id)
				delivered := queueHolds(t, srv, qURL) - before
				switch {
				case allowed && (o.Outcome != "delivered" || o.Warning != "" || delivered != 1):
					t.Errorf("%s: outcome %+v, %d copies delivered; want delivered without a warning", step, o, delivered)
				case !allowed && mode == sns.QueuePoliciesEnforce && (o.Outcome != "failed" || delivered != 0):
					t.Errorf("%s: outcome %+v, %d copies delivered; want refused by the Policy", step, o, delivered)
				case !allowed && mode == sns.QueuePoliciesWarn && (o.Outcome != "delivered" || !strings.HasPrefix(o.Warning, "AWS would not deliver this copy") || delivered != 1):
					t.Errorf("%s: outcome %+v, %d copies delivered; want delivered with AWS's refusal noted", step, o, delivered)
				}
			}
			setPolicy := func(policy func(q, topic string) string) {
				t.Helper()
				if _, err := srv.Client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(qURL),
					Attributes: map[string]string{"Policy": policy(snsQueueARN("q"), topic)}}); err != nil {
					t.Fatal(err)
				}
			}
			remake := func(policy func(q, topic string) string) {
				t.Helper()
				if _, err := srv.Client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(qURL)}); err != nil {
					t.Fatal(err)
				}
				srv.Clock.Advance(61 * time.Second) // SQS's wait before a deleted queue's name is taken again
				qURL = srv.MustCreateQueue(t, "q", map[string]string{"Policy": policy(snsQueueARN("q"), topic)})
			}
			check("the Policy allows the topic", true)
			check("again", true)
			setPolicy(otherTopic)
			check("the Policy changed to allow another topic", false)
			setPolicy(snsAllows)
			check("the Policy changed back", true)
			setPolicy(none)
			check("the Policy cleared", false)
			setPolicy(snsAllows)
			check("the Policy set again", true)
			remake(none)
			check("the queue deleted and made again without a Policy", false)
			remake(snsAllows)
			check("the queue made again with the Policy", true)
		})
	}
}
