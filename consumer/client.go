package consumer

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Client is the part of aws-sdk-go-v2's *sqs.Client the runtime uses. An
// *sqs.Client satisfies it, for Baton and for Amazon SQS alike; tests pass a
// fake (consumertest.SQS) or wrap a real client to inject faults.
//
// The runtime changes and deletes leases only through the batch actions, even
// for a single lease, so every per-entry failure is read the same way.
type Client interface {
	// ReceiveMessage long-polls for messages; the runtime always sends
	// MaxNumberOfMessages, VisibilityTimeout and WaitTimeSeconds.
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	// ChangeMessageVisibilityBatch extends and releases leases.
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	// DeleteMessageBatch deletes handled messages.
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	// SendMessage re-sends snoozed messages and dead-letters permanent
	// failures.
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	// GetQueueAttributes reads the queue's settings at start.
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	// GetQueueUrl finds the dead-letter queue named by the RedrivePolicy.
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

var _ Client = (*sqs.Client)(nil)
