package server

import (
	"context"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/protocol/wire"
)

// operations is the one table of SQS actions both codecs serve. Each handler
// turns wire structs into engine calls and back; it holds no queue rules.
func (s *Server) operations() protocol.Table {
	return protocol.NewTable(append(s.redriveOperations(),
		protocol.Op("CreateQueue", s.createQueue),
		protocol.Op("DeleteQueue", s.deleteQueue),
		protocol.Op("GetQueueUrl", s.getQueueURL),
		protocol.Op("ListQueues", s.listQueues),
		protocol.Op("GetQueueAttributes", s.getQueueAttributes),
		protocol.Op("SetQueueAttributes", s.setQueueAttributes),
		protocol.Op("PurgeQueue", s.purgeQueue),
		protocol.Op("SendMessage", s.sendMessage),
		protocol.Op("SendMessageBatch", s.sendMessageBatch),
		protocol.Op("ReceiveMessage", s.receiveMessage),
		protocol.Op("DeleteMessage", s.deleteMessage),
		protocol.Op("DeleteMessageBatch", s.deleteMessageBatch),
		protocol.Op("ChangeMessageVisibility", s.changeMessageVisibility),
		protocol.Op("ChangeMessageVisibilityBatch", s.changeMessageVisibilityBatch),
		protocol.Op("TagQueue", s.tagQueue),
		protocol.Op("UntagQueue", s.untagQueue),
		protocol.Op("ListQueueTags", s.listQueueTags),
	)...)
}

var none = &protocol.NoOutput{}

func (s *Server) createQueue(ctx context.Context, in *wire.CreateQueueInput) (*wire.CreateQueueOutput, error) {
	q, err := s.engine.CreateQueue(ctx, engine.CreateQueueParams{
		Region: regionOf(ctx), Account: s.accountOf(ctx), Name: in.QueueName, Attributes: in.Attributes, Tags: in.Tags,
	})
	if err != nil {
		return nil, err
	}
	return &wire.CreateQueueOutput{QueueUrl: queueURL(ctx, q)}, nil
}

func (s *Server) deleteQueue(ctx context.Context, in *wire.DeleteQueueInput) (*protocol.NoOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return none, s.engine.DeleteQueue(ctx, ref)
}

func (s *Server) getQueueURL(ctx context.Context, in *wire.GetQueueUrlInput) (*wire.GetQueueUrlOutput, error) {
	account := s.accountOf(ctx)
	if in.QueueOwnerAWSAccountId != "" && in.QueueOwnerAWSAccountId != account {
		return nil, errNoSuchQueue()
	}
	q, err := s.engine.GetQueue(ctx, engine.QueueRef{Region: regionOf(ctx), Account: account, Name: in.QueueName})
	if err != nil {
		return nil, err
	}
	return &wire.GetQueueUrlOutput{QueueUrl: queueURL(ctx, q)}, nil
}

func (s *Server) listQueues(ctx context.Context, in *wire.ListQueuesInput) (*wire.ListQueuesOutput, error) {
	qs, next, err := s.engine.ListQueues(ctx, engine.ListQueuesParams{
		Region: regionOf(ctx), Account: s.accountOf(ctx), Prefix: in.QueueNamePrefix, MaxResults: in.MaxResults, NextToken: in.NextToken,
	})
	if err != nil {
		return nil, err
	}
	out := &wire.ListQueuesOutput{NextToken: next}
	for _, q := range qs {
		out.QueueUrls = append(out.QueueUrls, queueURL(ctx, q))
	}
	return out, nil
}

func (s *Server) getQueueAttributes(ctx context.Context, in *wire.GetQueueAttributesInput) (*wire.GetQueueAttributesOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	attrs, err := s.engine.GetQueueAttributes(ctx, ref, in.AttributeNames)
	if err != nil {
		return nil, err
	}
	return &wire.GetQueueAttributesOutput{Attributes: attrs}, nil
}

func (s *Server) setQueueAttributes(ctx context.Context, in *wire.SetQueueAttributesInput) (*protocol.NoOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return none, s.engine.SetQueueAttributes(ctx, ref, in.Attributes)
}

func (s *Server) purgeQueue(ctx context.Context, in *wire.PurgeQueueInput) (*protocol.NoOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return none, s.engine.PurgeQueue(ctx, ref)
}

func (s *Server) sendMessage(ctx context.Context, in *wire.SendMessageInput) (*wire.SendMessageOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	res, err := s.engine.SendMessage(ctx, ref, engine.SendParams{
		Body:             in.MessageBody,
		DelaySeconds:     in.DelaySeconds,
		Attributes:       fromWireAttributes(in.MessageAttributes),
		SystemAttributes: fromWireAttributes(in.MessageSystemAttributes),
		GroupID:          deref(in.MessageGroupId),
		DedupID:          deref(in.MessageDeduplicationId),
		EmptyGroupID:     isEmpty(in.MessageGroupId),
		EmptyDedupID:     isEmpty(in.MessageDeduplicationId),
		TraceHeader:      requestFrom(ctx).traceHeader,
	})
	if err != nil {
		return nil, err
	}
	return &wire.SendMessageOutput{
		MessageId:                    res.MessageID,
		MD5OfMessageBody:             res.MD5OfBody,
		MD5OfMessageAttributes:       res.MD5OfAttributes,
		MD5OfMessageSystemAttributes: res.MD5OfSystemAttributes,
		SequenceNumber:               res.SequenceNumber,
	}, nil
}

func (s *Server) sendMessageBatch(ctx context.Context, in *wire.SendMessageBatchInput) (*wire.SendMessageBatchOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	entries := make([]engine.SendParams, len(in.Entries))
	trace := requestFrom(ctx).traceHeader // every message of the batch
	for i, en := range in.Entries {
		entries[i] = engine.SendParams{
			ID:               en.Id,
			Body:             en.MessageBody,
			DelaySeconds:     en.DelaySeconds,
			Attributes:       fromWireAttributes(en.MessageAttributes),
			SystemAttributes: fromWireAttributes(en.MessageSystemAttributes),
			GroupID:          deref(en.MessageGroupId),
			DedupID:          deref(en.MessageDeduplicationId),
			EmptyGroupID:     isEmpty(en.MessageGroupId),
			EmptyDedupID:     isEmpty(en.MessageDeduplicationId),
			TraceHeader:      trace,
		}
	}
	ok, failed, err := s.engine.SendMessageBatch(ctx, ref, entries)
	if err != nil {
		return nil, err
	}
	out := &wire.SendMessageBatchOutput{
		Successful: make([]wire.SendMessageBatchResultEntry, len(ok)),
		Failed:     toWireFailures(failed),
	}
	for i, r := range ok {
		out.Successful[i] = wire.SendMessageBatchResultEntry{
			Id:                           r.ID,
			MessageId:                    r.MessageID,
			MD5OfMessageBody:             r.MD5OfBody,
			MD5OfMessageAttributes:       r.MD5OfAttributes,
			MD5OfMessageSystemAttributes: r.MD5OfSystemAttributes,
			SequenceNumber:               r.SequenceNumber,
		}
	}
	return out, nil
}

func (s *Server) receiveMessage(ctx context.Context, in *wire.ReceiveMessageInput) (*wire.ReceiveMessageOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	release, err := s.holdPollSlot(ctx, ref, in.WaitTimeSeconds)
	if err != nil {
		return nil, err
	}
	defer release()
	msgs, err := s.engine.ReceiveMessage(ctx, ref, engine.ReceiveParams{
		MaxNumberOfMessages:     in.MaxNumberOfMessages,
		VisibilityTimeout:       in.VisibilityTimeout,
		WaitTimeSeconds:         in.WaitTimeSeconds,
		AttributeNames:          append(append([]string(nil), in.AttributeNames...), in.MessageSystemAttributeNames...),
		MessageAttributeNames:   in.MessageAttributeNames,
		ReceiveRequestAttemptID: in.ReceiveRequestAttemptId,
	})
	if err != nil {
		return nil, err
	}
	out := &wire.ReceiveMessageOutput{}
	for _, m := range msgs {
		out.Messages = append(out.Messages, wire.Message{
			MessageId:              m.MessageID,
			ReceiptHandle:          m.ReceiptHandle,
			MD5OfBody:              m.MD5OfBody,
			Body:                   m.Body,
			Attributes:             m.Attributes,
			MD5OfMessageAttributes: m.MD5OfMessageAttributes,
			MessageAttributes:      toWireAttributes(m.MessageAttributes),
		})
	}
	return out, nil
}

func (s *Server) deleteMessage(ctx context.Context, in *wire.DeleteMessageInput) (*protocol.NoOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return none, s.engine.DeleteMessage(ctx, ref, in.ReceiptHandle)
}

func (s *Server) deleteMessageBatch(ctx context.Context, in *wire.DeleteMessageBatchInput) (*wire.DeleteMessageBatchOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	entries := make([]engine.HandleEntry, len(in.Entries))
	for i, en := range in.Entries {
		entries[i] = engine.HandleEntry{ID: en.Id, ReceiptHandle: en.ReceiptHandle}
	}
	ok, failed, err := s.engine.DeleteMessageBatch(ctx, ref, entries)
	if err != nil {
		return nil, err
	}
	return &wire.DeleteMessageBatchOutput{Successful: toWireIDs(ok), Failed: toWireFailures(failed)}, nil
}

func (s *Server) changeMessageVisibility(ctx context.Context, in *wire.ChangeMessageVisibilityInput) (*protocol.NoOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return none, s.engine.ChangeMessageVisibility(ctx, ref, in.ReceiptHandle, in.VisibilityTimeout)
}

func (s *Server) changeMessageVisibilityBatch(ctx context.Context, in *wire.ChangeMessageVisibilityBatchInput) (*wire.ChangeMessageVisibilityBatchOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	entries := make([]engine.VisibilityEntry, len(in.Entries))
	for i, en := range in.Entries {
		entries[i] = engine.VisibilityEntry{ID: en.Id, ReceiptHandle: en.ReceiptHandle, VisibilityTimeout: en.VisibilityTimeout}
	}
	ok, failed, err := s.engine.ChangeMessageVisibilityBatch(ctx, ref, entries)
	if err != nil {
		return nil, err
	}
	return &wire.ChangeMessageVisibilityBatchOutput{Successful: toWireIDs(ok), Failed: toWireFailures(failed)}, nil
}

func (s *Server) tagQueue(ctx context.Context, in *wire.TagQueueInput) (*protocol.NoOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return none, s.engine.TagQueue(ctx, ref, in.Tags)
}

func (s *Server) untagQueue(ctx context.Context, in *wire.UntagQueueInput) (*protocol.NoOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return none, s.engine.UntagQueue(ctx, ref, in.TagKeys)
}

func (s *Server) listQueueTags(ctx context.Context, in *wire.ListQueueTagsInput) (*wire.ListQueueTagsOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	tags, err := s.engine.ListQueueTags(ctx, ref)
	if err != nil {
		return nil, err
	}
	out := &wire.ListQueueTagsOutput{}
	if len(tags) > 0 {
		out.Tags = tags
	}
	return out, nil
}

// deref returns an optional string's value, "" when absent.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// isEmpty reports whether an optional string was given, and empty.
func isEmpty(s *string) bool { return s != nil && *s == "" }

func fromWireAttributes(in map[string]wire.MessageAttributeValue) map[string]baton.MessageAttribute {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]baton.MessageAttribute, len(in))
	for k, v := range in {
		out[k] = baton.MessageAttribute{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}

func toWireAttributes(in map[string]baton.MessageAttribute) map[string]wire.MessageAttributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]wire.MessageAttributeValue, len(in))
	for k, v := range in {
		out[k] = wire.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}

func toWireIDs(ids []string) []wire.BatchResultEntry {
	out := make([]wire.BatchResultEntry, len(ids))
	for i, id := range ids {
		out[i] = wire.BatchResultEntry{Id: id}
	}
	return out
}

func toWireFailures(failed []engine.BatchError) []wire.BatchResultErrorEntry {
	out := make([]wire.BatchResultErrorEntry, len(failed))
	for i, f := range failed {
		spec := f.Err.Code.Spec()
		out[i] = wire.BatchResultErrorEntry{Id: f.ID, SenderFault: !spec.Receiver, Code: spec.QueryCode, Message: f.Err.Message}
	}
	return out
}
