package server_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/batontest"
)

// TestSNSFIFOGroupOrderTwoNodes: publishes of one message group made at
// once through two nodes reach every subscribed queue in one order, as
// AWS delivers a FIFO topic's group to all its subscriptions. (Each node
// used to hold the group for its own publishes only, and the two nodes'
// copies crossed: queue a got one node's publish first, queue b the
// other's.) On handles of a memstore.Cluster and on two PostgreSQL stores
// of one database.
func TestSNSFIFOGroupOrderTwoNodes(t *testing.T) {
	onTwoNodes(t, snsFIFOGroupOrderTwoNodes)
}

func snsFIFOGroupOrderTwoNodes(t *testing.T, a, b baton.Store) {
	const publishers, each = 4, 10 // per node
	nodes := []*batontest.Server{startNode(t, a), startNode(t, b)}
	sns := nodes[0].SNSClient()
	topic := mustCreateFIFOTopic(t, sns, "ordered.fifo", nil)
	queues := []string{"a.fifo", "b.fifo", "c.fifo"}
	urls := make([]string, len(queues))
	for i, q := range queues {
		out, err := nodes[0].Client().CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(q),
			Attributes: map[string]string{"FifoQueue": "true"}})
		if err != nil {
			t.Fatal(err)
		}
		urls[i] = *out.QueueUrl
		mustSubscribe(t, sns, topic, snsQueueARN(q), map[string]string{"RawMessageDelivery": "true"})
	}

	var wg sync.WaitGroup
	errs := make(chan error, 2*publishers)
	for n, node := range nodes {
		for p := range publishers {
			wg.Go(func() {
				for i := range each {
					body := fmt.Sprintf("n%d-p%d-%d", n, p, i)
					if _, err := node.SNSClient().Publish(t.Context(), &awssns.PublishInput{TopicArn: aws.String(topic),
						Message: aws.String(body), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(body)}); err != nil {
						errs <- fmt.Errorf("publish %s: %w", body, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	first := drainInOrder(t, nodes[0].Client(), urls[0])
	if len(first) != 2*publishers*each {
		t.Fatalf("%s holds %d messages, want %d", queues[0], len(first), 2*publishers*each)
	}
	for i, url := range urls[1:] {
		if got := drainInOrder(t, nodes[1].Client(), url); !slices.Equal(got, first) {
			t.Fatalf("%s holds the group in another order than %s:\n%v\n%v", queues[i+1], queues[0], got, first)
		}
	}
}

// drainInOrder receives and deletes every message of a queue and returns
// their bodies in the order received.
func drainInOrder(t *testing.T, c *sqs.Client, url string) []string {
	t.Helper()
	var bodies []string
	for {
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return bodies
		}
		for _, m := range out.Messages {
			bodies = append(bodies, *m.Body)
			if _, err := c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
