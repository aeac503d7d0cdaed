package server

import (
	"context"
	"net/http"

	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/protocol/snswire"
	"github.com/baton-sqs/baton/sns"
)

// snsAddPermission is SNS's AddPermission: a statement added to a
// topic's Policy.
func (s *Server) snsAddPermission(svc *sns.Service) protocol.Operation {
	return protocol.Op("AddPermission", func(ctx context.Context, in *snswire.AddPermissionInput) (*protocol.NoOutput, error) {
		return nil, svc.AddPermission(ctx, s.caller(ctx), in.TopicArn, in.Label, in.AWSAccountId, in.ActionName)
	})
}

// snsRemovePermission is SNS's RemovePermission: a statement removed from
// a topic's Policy.
func (s *Server) snsRemovePermission(svc *sns.Service) protocol.Operation {
	return protocol.Op("RemovePermission", func(ctx context.Context, in *snswire.RemovePermissionInput) (*protocol.NoOutput, error) {
		return nil, svc.RemovePermission(ctx, s.caller(ctx), in.TopicArn, in.Label)
	})
}

// sharedWithSQS are the actions SNS and SQS both have: an unsigned request
// without a Version is SNS's only if it names a topic.
var sharedWithSQS = map[string]bool{"AddPermission": true, "RemovePermission": true}

// isSNSSharedAction tells, for an action both services have, whether the
// request is SNS's: it names a TopicArn.
func isSNSSharedAction(r *http.Request) bool {
	return r.Form.Get("TopicArn") != ""
}
