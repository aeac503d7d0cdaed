// Package orders is a stand-in for code outside Baton that uses SQS through
// aws-sdk-go-v2, here to be tested with package batontest from a module of
// its own: its go.mod requires github.com/baton-sqs/baton, replaced by the
// repository it sits in, as a project vendoring a fork or trying a change
// would. The batontest tests of the repository run `go test` here.
package orders

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Place sends an order to the queue.
func Place(ctx context.Context, c *sqs.Client, queue, order string) error {
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(order)})
	return err
}

// Ship receives up to ten orders and ships each with ship, deleting those
// shipped; an order ship fails stays on the queue to be received again once
// its lease lapses. It returns how many orders were shipped.
func Ship(ctx context.Context, c *sqs.Client, queue string, ship func(order string) error) (int, error) {
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
	if err != nil {
		return 0, err
	}
	shipped := 0
	for _, m := range out.Messages {
		if err := ship(aws.ToString(m.Body)); err != nil {
			continue
		}
		if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queue), ReceiptHandle: m.ReceiptHandle}); err != nil {
			return shipped, fmt.Errorf("delete %s: %w", aws.ToString(m.MessageId), err)
		}
		shipped++
	}
	return shipped, nil
}
