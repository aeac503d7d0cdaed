package batontest

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/sns"
)

// SNSClient returns an SNS client of aws-sdk-go-v2 for the server, as
// Client returns an SQS one: the same endpoint, region, credentials and no
// retries. The server serves SNS over stores that keep topics (the memory
// and embedded stores).
func (s *Server) SNSClient() *awssns.Client {
	return s.snsClient(s.client.Options().Credentials)
}

// SNSClientFor returns an SNS client like SNSClient that signs with the
// given key, at the server clock's time.
func (s *Server) SNSClientFor(accessKeyID, secretAccessKey string) *awssns.Client {
	return s.snsClient(credentials.NewStaticCredentialsProvider(accessKeyID, secretAccessKey, ""))
}

func (s *Server) snsClient(creds aws.CredentialsProvider) *awssns.Client {
	return awssns.New(awssns.Options{
		BaseEndpoint:     aws.String(s.url),
		Region:           Region,
		Credentials:      creds,
		RetryMaxAttempts: 1,
		HTTPSignerV4:     clockSigner{signer: v4.NewSigner(), clock: s.clock},
		HTTPClient:       sdkhttp.Client(nil),
	})
}

// Topic creates the SNS topic spec describes, with SNSClient, and returns
// its ARN; it fails the test if spec is malformed or the server refuses the
// topic. A spec is a topic name, then optionally "?" and the topic's
// attributes as CreateTopic takes them, in the form of a URL query, as for
// Queue:
//
//	orders
//	orders?DisplayName=Orders&SignatureVersion=2
//
// Creating a topic again with the same spec returns the same ARN.
func (s *Server) Topic(tb testing.TB, spec string) string {
	tb.Helper()
	arn, err := s.CreateTopic(context.Background(), spec)
	if err != nil {
		tb.Fatalf("batontest: topic %q: %v", spec, err)
	}
	return arn
}

// CreateTopic is Topic for code without a testing.TB: it returns the error
// instead of failing the test.
func (s *Server) CreateTopic(ctx context.Context, spec string) (string, error) {
	t, err := parseSNSSpec(spec)
	if err != nil {
		return "", err
	}
	out, err := s.SNSClient().CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String(t.name), Attributes: t.attrs})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.TopicArn), nil
}

// Subscribe subscribes the queue spec describes to the topic topicARN (as
// Topic returns it), with SNSClient, and returns the subscription's ARN;
// it fails the test if spec is malformed or the server refuses it. A spec
// is a queue name of the server's account, then optionally "?" and the
// subscription's attributes as Subscribe takes them, as for Topic:
//
//	billing
//	billing?RawMessageDelivery=true
//
// The queue need not exist yet (as on AWS); until it does, its copies of
// the topic's messages are dropped.
func (s *Server) Subscribe(tb testing.TB, topicARN, spec string) string {
	tb.Helper()
	arn, err := s.SubscribeQueue(context.Background(), topicARN, spec)
	if err != nil {
		tb.Fatalf("batontest: subscribe %q to %s: %v", spec, topicARN, err)
	}
	return arn
}

// SubscribeQueue is Subscribe for code without a testing.TB: it returns
// the error instead of failing the test.
func (s *Server) SubscribeQueue(ctx context.Context, topicARN, spec string) (string, error) {
	q, err := parseSNSSpec(spec)
	if err != nil {
		return "", err
	}
	out, err := s.SNSClient().Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"),
		Endpoint: aws.String("arn:aws:sqs:" + Region + ":" + Account + ":" + q.name), Attributes: q.attrs, ReturnSubscriptionArn: true})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.SubscriptionArn), nil
}

// parseSNSSpec parses a topic's or subscription's spec: a queue's, without
// its dlq key.
func parseSNSSpec(spec string) (queueSpec, error) {
	q, err := parseSpec(spec)
	if err == nil && q.dlq != "" {
		err = fmt.Errorf("the spec %q gives %s, which only a queue's spec takes", spec, dlqKey)
	}
	return q, err
}

// SNSDeliveries returns what AWS would have sent, and Baton records
// instead of sending (docs/sns.md, "Other protocols"): each copy of a
// publish for the email, email-json, sms, lambda and firehose
// subscriptions whose filter policy matched, each publish to a phone
// number, and the confirmations email subscriptions are sent; oldest
// first. f selects them, its fields left "" matching all; its Account is
// the server's Account unless set. The record holds the
// sns.MaxDeliveryRecords newest. A server whose store keeps no topics
// returns none.
//
//	texts := srv.SNSDeliveries(sns.DeliveryFilter{Protocol: "sms", Endpoint: "+15555550100"})
//	// texts[0].Payload is the SMS's text
func (s *Server) SNSDeliveries(f sns.DeliveryFilter) []sns.DeliveryRecord {
	if s.sns == nil {
		return nil
	}
	if f.Account == "" {
		f.Account = Account
	}
	return s.sns.Deliveries(f).Records
}

// ClearSNSDeliveries deletes the records f selects, as SNSDeliveries
// selects them, and returns how many.
func (s *Server) ClearSNSDeliveries(f sns.DeliveryFilter) int {
	if s.sns == nil {
		return 0
	}
	if f.Account == "" {
		f.Account = Account
	}
	return s.sns.ClearDeliveries(f)
}
