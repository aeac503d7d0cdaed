package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// testMultiNodeQueueChanges: a node keeps a queue's row for a moment
// (store/pgstore/queuecache.go), and a change made through another node
// still reaches it promptly; no write through one node undoes a change
// made through the other just before; and a send through a node after the
// queue was deleted through the other is answered success (as SQS may
// while a deletion takes effect) or QueueDoesNotExist, never an error of
// another kind, and QueueDoesNotExist promptly.
func testMultiNodeQueueChanges(t *testing.T, cluster *pgtest.Cluster) {
	nodes := startMultiNodes(t, cluster, 2)
	a, b := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const queue = "changes"
	mnCreateQueue(t, a, queue, nil)
	attr := func(n *mnNode, name types.QueueAttributeName) string {
		t.Helper()
		out, err := n.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(n.queueURL(queue)),
			AttributeNames: []types.QueueAttributeName{name}})
		if err != nil {
			t.Fatalf("get %s from %s: %v", name, n.URL, err)
		}
		return out.Attributes[string(name)]
	}
	set := func(n *mnNode, name types.QueueAttributeName, v string) {
		t.Helper()
		if _, err := n.client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(n.queueURL(queue)),
			Attributes: map[string]string{string(name): v}}); err != nil {
			t.Fatalf("set %s through %s: %v", name, n.URL, err)
		}
	}
	if v := attr(b, types.QueueAttributeNameVisibilityTimeout); v != "30" {
		t.Fatalf("VisibilityTimeout %q, want 30", v)
	}

	set(a, types.QueueAttributeNameVisibilityTimeout, "45")
	if v := attr(a, types.QueueAttributeNameVisibilityTimeout); v != "45" {
		t.Errorf("the node that set it reads VisibilityTimeout %q, want 45 at once", v)
	}
	poll.For(t, 10*time.Second, func() error {
		if v := attr(b, types.QueueAttributeNameVisibilityTimeout); v != "45" {
			return fmt.Errorf("the other node reads VisibilityTimeout %q, want 45", v)
		}
		return nil
	})

	// One after the other through the two nodes: neither undoes the other.
	set(a, types.QueueAttributeNameDelaySeconds, "5")
	set(b, types.QueueAttributeNameMaximumMessageSize, "2048")
	for _, n := range nodes {
		poll.For(t, 10*time.Second, func() error {
			if d, m := attr(n, types.QueueAttributeNameDelaySeconds), attr(n, types.QueueAttributeNameMaximumMessageSize); d != "5" || m != "2048" {
				return fmt.Errorf("%s reads DelaySeconds %q, MaximumMessageSize %q; want 5 and 2048", n.URL, d, m)
			}
			return nil
		})
	}

	if _, err := b.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(b.queueURL(queue)), MessageBody: aws.String("before")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(a.queueURL(queue))}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, func() error {
		_, err := b.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(b.queueURL(queue)), MessageBody: aws.String("after")})
		var gone *types.QueueDoesNotExist
		switch {
		case errors.As(err, &gone):
			return nil
		case err != nil:
			t.Fatalf("a send through the other node after the queue's deletion: %v, want success or QueueDoesNotExist", err)
		}
		return errors.New("a send through the other node still succeeds")
	})
	_, err := b.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(b.queueURL(queue))})
	if gone := (*types.QueueDoesNotExist)(nil); !errors.As(err, &gone) {
		t.Errorf("a receive through the other node after the queue's deletion: %v, want QueueDoesNotExist", err)
	}
}
