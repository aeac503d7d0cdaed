package server

import (
	"cmp"
	"context"
	"net/http"
	"strings"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/protocol/awsquery"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/protocol/snswire"
	"github.com/baton-sqs/baton/sns"
)

// snsVersion is the Version an SNS Query request carries (SQS's is
// 2012-11-05).
const snsVersion = "2010-03-31"

// isSNSRequest tells an SNS request from an SQS one on the one endpoint
// (docs/architecture.md §8): by the service its SigV4 credential is scoped
// to, else by its Version, else by an action only SNS has.
func (s *Server) isSNSRequest(r *http.Request) bool {
	if svc := signingService(r); svc != "" {
		return svc == sigv4.ServiceSNS
	}
	if v := r.Form.Get("Version"); v != "" {
		return v == snsVersion
	}
	if action := r.Form.Get("Action"); sharedWithSQS[action] {
		return isSNSSharedAction(r)
	}
	_, ok := s.snsOps[r.Form.Get("Action")]
	return ok
}

// signingService is the service a request's SigV4 credential scope names,
// "" if it is not signed.
func signingService(r *http.Request) string {
	if h := r.Header.Get("Authorization"); strings.TrimSpace(h) != "" {
		if a, err := sigv4.ParseAuthorization(h); err == nil {
			return a.Scope.Service
		}
		return ""
	}
	if c := r.URL.Query().Get("X-Amz-Credential"); c != "" {
		if parts := strings.Split(c, "/"); len(parts) == 5 {
			return parts[3]
		}
	}
	return ""
}

// serveSNS runs an SNS Query request, its form parsed.
func (s *Server) serveSNS(w http.ResponseWriter, r *http.Request, reqID string) {
	action := r.Form.Get("Action")
	op, ok := s.snsOps[action]
	if !ok {
		msg := "No Action was given."
		if action != "" {
			msg = "The action " + action + " is not valid for this endpoint."
		}
		awsquery.WriteSNSError(w, baton.Errorf(baton.ErrInvalidAction, "%s", msg), reqID)
		return
	}
	in, err := awsquery.Decode(r.Form, op)
	if err != nil {
		// The decoder speaks SQS's code; SNS has one code for it.
		if e := baton.AsError(err); e.Code == baton.ErrInvalidParameterValue {
			err = baton.Errorf(baton.ErrSNSInvalidParameter, "%s", e.Message)
		}
		s.metrics.observe(op.Name, err, 0)
	} else {
		var out any
		if out, err = s.call(r.Context(), op, in, reqID); err == nil {
			s.deliver(r.Context(), w, nil, func(w http.ResponseWriter) { awsquery.WriteSNSResult(w, op, out, reqID) }) // answer.go
			return
		}
	}
	awsquery.WriteSNSError(w, baton.AsError(err), reqID)
}

// caller is who an SNS request acts for, and in which region.
func (s *Server) caller(ctx context.Context) sns.Caller {
	return sns.Caller{Region: regionOf(ctx), Account: s.accountOf(ctx)}
}

// snsOperations is the table of the SNS actions Baton serves; any other
// is InvalidAction, as an action SNS does not have.
func (s *Server) snsOperations(svc *sns.Service) protocol.Table {
	return protocol.NewTable(append(append(snsAbsentFeatures(), s.snsAbsentWrites(svc)...),
		protocol.Op("CreateTopic", func(ctx context.Context, in *snswire.CreateTopicInput) (*snswire.CreateTopicOutput, error) {
			tags := wireTags(in.Tags)
			if in.DataProtectionPolicy != "" {
				in.Attributes = withAttribute(in.Attributes, "DataProtectionPolicy", in.DataProtectionPolicy)
			}
			arn, err := svc.CreateTopic(ctx, s.caller(ctx), sns.CreateTopicParams{Name: in.Name, Attributes: in.Attributes, Tags: tags})
			if err != nil {
				return nil, err
			}
			return &snswire.CreateTopicOutput{TopicArn: arn}, nil
		}),
		protocol.Op("DeleteTopic", func(ctx context.Context, in *snswire.DeleteTopicInput) (*protocol.NoOutput, error) {
			return nil, svc.DeleteTopic(ctx, s.caller(ctx), in.TopicArn)
		}),
		protocol.Op("ListTopics", func(ctx context.Context, in *snswire.ListTopicsInput) (*snswire.ListTopicsOutput, error) {
			arns, next, err := svc.ListTopics(ctx, s.caller(ctx), in.NextToken)
			if err != nil {
				return nil, err
			}
			out := &snswire.ListTopicsOutput{NextToken: next}
			for _, a := range arns {
				out.Topics.Member = append(out.Topics.Member, snswire.TopicEntry{TopicArn: a})
			}
			return out, nil
		}),
		protocol.Op("GetTopicAttributes", func(ctx context.Context, in *snswire.GetTopicAttributesInput) (*snswire.GetTopicAttributesOutput, error) {
			attrs, err := svc.GetTopicAttributes(ctx, s.caller(ctx), in.TopicArn)
			if err != nil {
				return nil, err
			}
			return &snswire.GetTopicAttributesOutput{Attributes: snswire.AttributeMap{Entry: attrs}}, nil
		}),
		protocol.Op("SetTopicAttributes", func(ctx context.Context, in *snswire.SetTopicAttributesInput) (*protocol.NoOutput, error) {
			return nil, svc.SetTopicAttributes(ctx, s.caller(ctx), in.TopicArn, in.AttributeName, in.AttributeValue)
		}),
		protocol.Op("Subscribe", func(ctx context.Context, in *snswire.SubscribeInput) (*snswire.SubscribeOutput, error) {
			arn, err := svc.Subscribe(ctx, s.caller(ctx), sns.SubscribeParams{TopicARN: in.TopicArn, Protocol: in.Protocol,
				Endpoint: in.Endpoint, Attributes: in.Attributes, ReturnSubscriptionARN: in.ReturnSubscriptionArn,
				BaseURL: requestFrom(ctx).baseURL})
			if err != nil {
				return nil, err
			}
			return &snswire.SubscribeOutput{SubscriptionArn: arn}, nil
		}),
		s.confirmSubscription(svc),
		protocol.Op("Unsubscribe", func(ctx context.Context, in *snswire.UnsubscribeInput) (*protocol.NoOutput, error) {
			return nil, svc.Unsubscribe(ctx, s.caller(ctx), sns.UnsubscribeParams{SubscriptionARN: in.SubscriptionArn,
				Authenticated: requestFrom(ctx).accessKey != "", BaseURL: requestFrom(ctx).baseURL})
		}),
		protocol.Op("GetSubscriptionAttributes", func(ctx context.Context, in *snswire.GetSubscriptionAttributesInput) (*snswire.GetSubscriptionAttributesOutput, error) {
			attrs, err := svc.GetSubscriptionAttributes(ctx, s.caller(ctx), in.SubscriptionArn)
			if err != nil {
				return nil, err
			}
			return &snswire.GetSubscriptionAttributesOutput{Attributes: snswire.AttributeMap{Entry: attrs}}, nil
		}),
		protocol.Op("SetSubscriptionAttributes", func(ctx context.Context, in *snswire.SetSubscriptionAttributesInput) (*protocol.NoOutput, error) {
			return nil, svc.SetSubscriptionAttributes(ctx, s.caller(ctx), in.SubscriptionArn, in.AttributeName, in.AttributeValue)
		}),
		protocol.Op("ListSubscriptions", func(ctx context.Context, in *snswire.ListSubscriptionsInput) (*snswire.ListSubscriptionsOutput, error) {
			return subscriptionsOutput(svc.ListSubscriptions(ctx, s.caller(ctx), in.NextToken))
		}),
		protocol.Op("ListSubscriptionsByTopic", func(ctx context.Context, in *snswire.ListSubscriptionsByTopicInput) (*snswire.ListSubscriptionsOutput, error) {
			return subscriptionsOutput(svc.ListSubscriptionsByTopic(ctx, s.caller(ctx), in.TopicArn, in.NextToken))
		}),
		s.publishBatch(svc),
		s.snsAddPermission(svc), s.snsRemovePermission(svc),
		protocol.Op("TagResource", func(ctx context.Context, in *snswire.TagResourceInput) (*snswire.TagResourceOutput, error) {
			return &snswire.TagResourceOutput{}, svc.TagResource(ctx, s.caller(ctx), in.ResourceArn, wireTags(in.Tags))
		}),
		protocol.Op("UntagResource", func(ctx context.Context, in *snswire.UntagResourceInput) (*snswire.UntagResourceOutput, error) {
			return &snswire.UntagResourceOutput{}, svc.UntagResource(ctx, s.caller(ctx), in.ResourceArn, in.TagKeys)
		}),
		protocol.Op("ListTagsForResource", func(ctx context.Context, in *snswire.ListTagsForResourceInput) (*snswire.ListTagsForResourceOutput, error) {
			tags, err := svc.ListTagsForResource(ctx, s.caller(ctx), in.ResourceArn)
			if err != nil {
				return nil, err
			}
			out := &snswire.ListTagsForResourceOutput{}
			for _, t := range tags {
				out.Tags.Member = append(out.Tags.Member, snswire.Tag{Key: t.Key, Value: t.Value})
			}
			return out, nil
		}),
		protocol.Op("Publish", func(ctx context.Context, in *snswire.PublishInput) (*snswire.PublishOutput, error) {
			req := requestFrom(ctx)
			p := sns.PublishParams{TopicARN: in.TopicArn, TargetARN: in.TargetArn, PhoneNumber: in.PhoneNumber,
				Message: in.Message, Subject: in.Subject, MessageStructure: in.MessageStructure,
				MessageGroupID: in.MessageGroupId, MessageDeduplicationID: in.MessageDeduplicationId,
				TraceHeader: req.traceHeader, BaseURL: req.baseURL}
			p.Attributes = wireAttributes(in.MessageAttributes)
			res, err := svc.Publish(ctx, s.caller(ctx), p)
			if err != nil {
				return nil, err
			}
			return &snswire.PublishOutput{MessageId: res.MessageID, SequenceNumber: res.SequenceNumber}, nil
		}),
	)...)
}

// publishBatch is PublishBatch's handler.
func (s *Server) publishBatch(svc *sns.Service) protocol.Operation {
	return protocol.Op("PublishBatch", func(ctx context.Context, in *snswire.PublishBatchInput) (*snswire.PublishBatchOutput, error) {
		req := requestFrom(ctx)
		p := sns.PublishBatchParams{TopicARN: in.TopicArn, TraceHeader: req.traceHeader, BaseURL: req.baseURL}
		for _, e := range in.PublishBatchRequestEntries {
			p.Entries = append(p.Entries, sns.BatchEntry{ID: e.Id, Message: e.Message, Subject: e.Subject,
				MessageStructure: e.MessageStructure, Attributes: wireAttributes(e.MessageAttributes),
				MessageGroupID: e.MessageGroupId, MessageDeduplicationID: e.MessageDeduplicationId})
		}
		res, err := svc.PublishBatch(ctx, s.caller(ctx), p)
		if err != nil {
			return nil, err
		}
		out := &snswire.PublishBatchOutput{}
		for _, ok := range res.Successful {
			out.Successful.Member = append(out.Successful.Member, snswire.PublishBatchResultEntry{Id: ok.ID, MessageId: ok.MessageID,
				SequenceNumber: ok.SequenceNumber})
		}
		for _, f := range res.Failed {
			spec := f.Err.Code.Spec()
			out.Failed.Member = append(out.Failed.Member, snswire.BatchResultErrorEntry{Id: f.ID, Code: spec.QueryCode,
				Message: f.Err.Message, SenderFault: !spec.Receiver})
		}
		return out, nil
	})
}

func wireAttributes(in []snswire.MessageAttribute) []sns.MessageAttribute {
	var out []sns.MessageAttribute
	for _, a := range in {
		out = append(out, sns.MessageAttribute{Name: a.Name, MessageAttribute: baton.MessageAttribute{
			DataType: a.Value.DataType, StringValue: a.Value.StringValue, BinaryValue: a.Value.BinaryValue}})
	}
	return out
}

func wireTags(in []snswire.Tag) []sns.Tag {
	tags := make([]sns.Tag, len(in))
	for i, t := range in {
		tags[i] = sns.Tag{Key: t.Key, Value: t.Value}
	}
	return tags
}

func withAttribute(attrs map[string]string, k, v string) map[string]string {
	if attrs == nil {
		attrs = make(map[string]string)
	}
	attrs[k] = v
	return attrs
}

func subscriptionsOutput(subs []sns.SubscriptionEntry, next string, err error) (*snswire.ListSubscriptionsOutput, error) {
	if err != nil {
		return nil, err
	}
	out := &snswire.ListSubscriptionsOutput{NextToken: next}
	for _, e := range subs {
		out.Subscriptions.Member = append(out.Subscriptions.Member, snswire.Subscription{SubscriptionArn: e.SubscriptionARN,
			Owner: e.Owner, Protocol: e.Protocol, Endpoint: e.Endpoint, TopicArn: e.TopicARN})
	}
	return out, nil
}

// serveCertificate serves the certificate SNS messages are signed with, at
// their SigningCertURL, to anyone: it is public, as AWS's is.
func (s *Server) serveCertificate(w http.ResponseWriter, r *http.Request) {
	pem, ok, err := s.sns.Certificate(r.Context(), strings.TrimPrefix(r.URL.Path, "/"))
	switch {
	case err != nil:
		s.log.Error("sns: signing certificate", "request_id", requestFrom(r.Context()).reqID, "err", err)
		http.Error(w, "the signing certificate cannot be read now", http.StatusServiceUnavailable)
	case !ok:
		http.NotFound(w, r)
	default:
		w.Header().Set("Content-Type", "application/x-x509-ca-cert")
		w.Write(pem)
	}
}

// isUnsubscribeURL reports whether r is a visit of an envelope's
// UnsubscribeURL or of a confirmation's SubscribeURL: an unsigned GET of
// Action=Unsubscribe or Action=ConfirmSubscription. AWS serves them
// without credentials, whoever has the URL.
func isUnsubscribeURL(r *http.Request) bool {
	a := r.URL.Query().Get("Action")
	return r.Method == http.MethodGet && (a == "Unsubscribe" || a == "ConfirmSubscription") &&
		r.Header.Get("Authorization") == "" && r.URL.Query().Get("X-Amz-Credential") == ""
}

// serveUnsubscribeURL serves an UnsubscribeURL or a SubscribeURL, signed
// or not: it acts for the account and in the region its SubscriptionArn
// or TopicArn names.
func (s *Server) serveUnsubscribeURL(w http.ResponseWriter, r *http.Request) {
	req := requestFrom(r.Context())
	if err := r.ParseForm(); err != nil {
		awsquery.WriteSNSError(w, readError(r, err), req.reqID)
		return
	}
	ctx := r.Context()
	arn := cmp.Or(r.Form.Get("SubscriptionArn"), r.Form.Get("TopicArn"))
	if parts := strings.Split(arn, ":"); len(parts) >= 6 && baton.ValidRegion(parts[3]) {
		req.region = parts[3]
		ctx = baton.NewContextWithAccount(context.WithValue(ctx, requestKey{}, req), parts[4])
	}
	s.serveSNS(w, r.WithContext(ctx), req.reqID)
}

// confirmSubscription is ConfirmSubscription's handler: a signed call, or
// a visit of a confirmation's SubscribeURL, which is not.
func (s *Server) confirmSubscription(svc *sns.Service) protocol.Operation {
	return protocol.Op("ConfirmSubscription", func(ctx context.Context, in *snswire.ConfirmSubscriptionInput) (*snswire.ConfirmSubscriptionOutput, error) {
		arn, err := svc.ConfirmSubscription(ctx, s.caller(ctx), sns.ConfirmParams{TopicARN: in.TopicArn, Token: in.Token,
			AuthenticateOnUnsubscribe: in.AuthenticateOnUnsubscribe, Authenticated: requestFrom(ctx).accessKey != ""})
		if err != nil {
			return nil, err
		}
		return &snswire.ConfirmSubscriptionOutput{SubscriptionArn: arn}, nil
	})
}
