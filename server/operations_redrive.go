package server

import (
	"context"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/protocol/wire"
)

// redriveOperations are the dead-letter, move-task and permission actions.
func (s *Server) redriveOperations() []protocol.Operation {
	return []protocol.Operation{
		protocol.Op("ListDeadLetterSourceQueues", s.listDeadLetterSourceQueues),
		protocol.Op("StartMessageMoveTask", s.startMessageMoveTask),
		protocol.Op("CancelMessageMoveTask", s.cancelMessageMoveTask),
		protocol.Op("ListMessageMoveTasks", s.listMessageMoveTasks),
		protocol.Op("AddPermission", s.addPermission),
		protocol.Op("RemovePermission", s.removePermission),
	}
}

func (s *Server) listDeadLetterSourceQueues(ctx context.Context, in *wire.ListDeadLetterSourceQueuesInput) (*wire.ListDeadLetterSourceQueuesOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	qs, next, err := s.engine.ListDeadLetterSourceQueues(ctx, ref, engine.ListDeadLetterSourceQueuesParams{MaxResults: in.MaxResults, NextToken: in.NextToken})
	if err != nil {
		return nil, err
	}
	out := &wire.ListDeadLetterSourceQueuesOutput{QueueUrls: []string{}, NextToken: next}
	for _, q := range qs {
		out.QueueUrls = append(out.QueueUrls, queueURL(ctx, q))
	}
	return out, nil
}

func (s *Server) startMessageMoveTask(ctx context.Context, in *wire.StartMessageMoveTaskInput) (*wire.StartMessageMoveTaskOutput, error) {
	h, err := s.engine.StartMessageMoveTask(ctx, engine.StartMessageMoveTaskParams{
		Region: regionOf(ctx), Account: s.accountOf(ctx), SourceARN: in.SourceArn, DestinationARN: in.DestinationArn, MaxPerSecond: in.MaxNumberOfMessagesPerSecond,
	})
	if err != nil {
		return nil, err
	}
	return &wire.StartMessageMoveTaskOutput{TaskHandle: h}, nil
}

func (s *Server) cancelMessageMoveTask(ctx context.Context, in *wire.CancelMessageMoveTaskInput) (*wire.CancelMessageMoveTaskOutput, error) {
	n, err := s.engine.CancelMessageMoveTask(ctx, regionOf(ctx), s.accountOf(ctx), in.TaskHandle)
	if err != nil {
		return nil, err
	}
	return &wire.CancelMessageMoveTaskOutput{ApproximateNumberOfMessagesMoved: n}, nil
}

func (s *Server) listMessageMoveTasks(ctx context.Context, in *wire.ListMessageMoveTasksInput) (*wire.ListMessageMoveTasksOutput, error) {
	tasks, err := s.engine.ListMessageMoveTasks(ctx, regionOf(ctx), s.accountOf(ctx), in.SourceArn, in.MaxResults)
	if err != nil {
		return nil, err
	}
	out := &wire.ListMessageMoveTasksOutput{}
	for _, t := range tasks {
		r := wire.ListMessageMoveTasksResultEntry{
			Status: t.Status, SourceArn: t.SourceARN, DestinationArn: t.DestinationARN,
			ApproximateNumberOfMessagesMoved: t.Moved, FailureReason: t.FailureReason,
			StartedTimestamp: t.StartedAt.UnixMilli(),
		}
		if t.Status == engine.TaskRunning {
			r.TaskHandle = t.Handle
		}
		if t.MaxPerSecond > 0 {
			r.MaxNumberOfMessagesPerSecond = &t.MaxPerSecond
		}
		toMove := t.ToMove
		r.ApproximateNumberOfMessagesToMove = &toMove
		out.Results = append(out.Results, r)
	}
	return out, nil
}

func (s *Server) addPermission(ctx context.Context, in *wire.AddPermissionInput) (*protocol.NoOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return none, s.engine.AddPermission(ctx, ref, engine.AddPermissionParams{Label: in.Label, AccountIDs: in.AWSAccountIds, Actions: in.Actions})
}

func (s *Server) removePermission(ctx context.Context, in *wire.RemovePermissionInput) (*protocol.NoOutput, error) {
	ref, err := s.queueRef(ctx, in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return none, s.engine.RemovePermission(ctx, ref, in.Label)
}
