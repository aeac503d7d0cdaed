package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

// TestServeSNSQueuePolicies: `baton serve` delivers a topic's copy to a
// queue without a Policy by default and logs that AWS would not deliver
// it; with --sns-queue-policies enforce it delivers nothing and logs why.
func TestServeSNSQueuePolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		held string
		log  string
	}{
		{nil, "1", "sns: a copy was delivered that AWS would not deliver"},
		{[]string{"--sns-queue-policies", "enforce"}, "0", "the queue has no Policy, and only a Policy statement lets sns.amazonaws.com sqs:SendMessage to it"},
	} {
		p := startServe(t, cliEnv(t), append([]string{"--store", "memory"}, tc.args...)...)
		c := testutil.NewClient(p.URL)
		q, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("q")})
		if err != nil {
			t.Fatal(err)
		}
		mustSucceed(t, p.URL, "topic", "create", "orders")
		mustSucceed(t, p.URL, "topic", "subscribe", "orders", "q")
		mustSucceed(t, p.URL, "publish", "orders", "paid")
		attrs, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
		if err != nil {
			t.Fatal(err)
		}
		if got := attrs.Attributes["ApproximateNumberOfMessages"]; got != tc.held {
			t.Errorf("serve %v: the queue holds %s messages, want %s", tc.args, got, tc.held)
		}
		if !strings.Contains(p.logs.String(), tc.log) {
			t.Errorf("serve %v: the log has no line with %q:\n%s", tc.args, tc.log, p.logs)
		}
	}
}
