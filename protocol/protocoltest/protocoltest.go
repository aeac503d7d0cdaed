// Package protocoltest offers the SQS operation table over the wire types
// with handlers that do nothing, for codec tests and fuzz targets that need
// only the request and response types, not an engine.
package protocoltest

import (
	"context"

	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/protocol/wire"
)

// noop is a handler that is never called: decoding needs only the types.
func noop[In, Out any](context.Context, *In) (*Out, error) { return nil, nil }

// Table is every SQS operation over the wire types, with handlers that do
// nothing and return no output.
func Table() protocol.Table {
	return protocol.NewTable(
		protocol.Op("CreateQueue", noop[wire.CreateQueueInput, wire.CreateQueueOutput]),
		protocol.Op("DeleteQueue", noop[wire.DeleteQueueInput, protocol.NoOutput]),
		protocol.Op("GetQueueUrl", noop[wire.GetQueueUrlInput, wire.GetQueueUrlOutput]),
		protocol.Op("ListQueues", noop[wire.ListQueuesInput, wire.ListQueuesOutput]),
		protocol.Op("GetQueueAttributes", noop[wire.GetQueueAttributesInput, wire.GetQueueAttributesOutput]),
		protocol.Op("SetQueueAttributes", noop[wire.SetQueueAttributesInput, protocol.NoOutput]),
		protocol.Op("PurgeQueue", noop[wire.PurgeQueueInput, protocol.NoOutput]),
		protocol.Op("SendMessage", noop[wire.SendMessageInput, wire.SendMessageOutput]),
		protocol.Op("SendMessageBatch", noop[wire.SendMessageBatchInput, wire.SendMessageBatchOutput]),
		protocol.Op("ReceiveMessage", noop[wire.ReceiveMessageInput, wire.ReceiveMessageOutput]),
		protocol.Op("DeleteMessage", noop[wire.DeleteMessageInput, protocol.NoOutput]),
		protocol.Op("DeleteMessageBatch", noop[wire.DeleteMessageBatchInput, wire.DeleteMessageBatchOutput]),
		protocol.Op("ChangeMessageVisibility", noop[wire.ChangeMessageVisibilityInput, protocol.NoOutput]),
		protocol.Op("ChangeMessageVisibilityBatch", noop[wire.ChangeMessageVisibilityBatchInput, wire.ChangeMessageVisibilityBatchOutput]),
		protocol.Op("TagQueue", noop[wire.TagQueueInput, protocol.NoOutput]),
		protocol.Op("UntagQueue", noop[wire.UntagQueueInput, protocol.NoOutput]),
		protocol.Op("ListQueueTags", noop[wire.ListQueueTagsInput, wire.ListQueueTagsOutput]),
		protocol.Op("ListDeadLetterSourceQueues", noop[wire.ListDeadLetterSourceQueuesInput, wire.ListDeadLetterSourceQueuesOutput]),
		protocol.Op("StartMessageMoveTask", noop[wire.StartMessageMoveTaskInput, wire.StartMessageMoveTaskOutput]),
		protocol.Op("CancelMessageMoveTask", noop[wire.CancelMessageMoveTaskInput, wire.CancelMessageMoveTaskOutput]),
		protocol.Op("ListMessageMoveTasks", noop[wire.ListMessageMoveTasksInput, wire.ListMessageMoveTasksOutput]),
		protocol.Op("AddPermission", noop[wire.AddPermissionInput, protocol.NoOutput]),
		protocol.Op("RemovePermission", noop[wire.RemovePermissionInput, protocol.NoOutput]),
	)
}
