package batontest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton"
)

// dlqKey is the spec's one key that is not an SQS attribute.
const dlqKey = "dlq"

// Queue creates the queue spec describes, with Client, and returns its URL;
// it fails the test if spec is malformed or the server refuses the queue.
//
// A spec is a queue name, then optionally "?" and its attributes in the
// form of a URL query: SQS's own attribute names with their values, as
// CreateQueue takes them, joined by "&":
//
//	jobs
//	jobs?VisibilityTimeout=5&DelaySeconds=1
//	jobs.fifo?ContentBasedDeduplication=true
//
// A name ending in ".fifo" makes a FIFO queue (FifoQueue=true is implied).
// One key is not an attribute: dlq=NAME:N gives the queue a dead-letter
// queue, NAME, created too if it does not exist (as a FIFO queue if NAME
// ends in ".fifo", as it must for a FIFO queue's), to which a message moves
// when it is received for the (N+1)th time: RedrivePolicy with
// maxReceiveCount N.
//
//	jobs?VisibilityTimeout=5&dlq=jobs-dlq:3
//
// The dead-letter queue made so has the default attributes; for others,
// create it first with its own spec.
//
// Values are URL-query encoded: "%26" is an "&" and "+" a space. Creating
// a queue again with the same spec returns the same URL, as CreateQueue
// does.
func (s *Server) Queue(tb testing.TB, spec string) string {
	tb.Helper()
	u, err := s.CreateQueue(context.Background(), spec)
	if err != nil {
		tb.Fatalf("batontest: queue %q: %v", spec, err)
	}
	return u
}

// CreateQueue is Queue for code without a testing.TB: it returns the error
// instead of failing the test.
func (s *Server) CreateQueue(ctx context.Context, spec string) (string, error) {
	q, err := parseSpec(spec)
	if err != nil {
		return "", err
	}
	if q.dlq != "" {
		dlq, err := s.createQueue(ctx, q.dlq, nil)
		if err != nil {
			return "", fmt.Errorf("dead-letter queue %s: %w", q.dlq, err)
		}
		out, err := s.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(dlq), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
		})
		if err != nil {
			return "", fmt.Errorf("dead-letter queue %s: %w", q.dlq, err)
		}
		policy, err := json.Marshal(map[string]string{
			"deadLetterTargetArn": out.Attributes[string(types.QueueAttributeNameQueueArn)],
			"maxReceiveCount":     strconv.Itoa(q.maxReceives),
		})
		if err != nil {
			return "", err
		}
		q.attrs[string(types.QueueAttributeNameRedrivePolicy)] = string(policy)
	}
	return s.createQueue(ctx, q.name, q.attrs)
}

// createQueue creates a queue, FIFO if its name says so, and returns its
// URL.
func (s *Server) createQueue(ctx context.Context, name string, attrs map[string]string) (string, error) {
	if baton.IsFIFOName(name) {
		if attrs == nil {
			attrs = make(map[string]string)
		}
		if _, ok := attrs[string(types.QueueAttributeNameFifoQueue)]; !ok {
			attrs[string(types.QueueAttributeNameFifoQueue)] = "true"
		}
	}
	out, err := s.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.QueueUrl), nil
}

// queueSpec is a parsed spec.
type queueSpec struct {
	name  string
	attrs map[string]string
	// dlq is the dead-letter queue's name, if any, and maxReceives its
	// maxReceiveCount.
	dlq         string
	maxReceives int
}

// parseSpec parses a spec (see Queue). It checks the spec's form only: the
// server judges the name and the attributes.
func parseSpec(spec string) (queueSpec, error) {
	name, query, _ := strings.Cut(spec, "?")
	q := queueSpec{name: name, attrs: make(map[string]string)}
	if name == "" {
		return q, fmt.Errorf("the spec %q names no queue", spec)
	}
	values, err := url.ParseQuery(query)
	if err != nil {
		return q, fmt.Errorf("the spec's attributes: %w", err)
	}
	for k, vs := range values {
		if len(vs) > 1 {
			return q, fmt.Errorf("the spec gives %s %d times", k, len(vs))
		}
		if k == "" {
			return q, fmt.Errorf("the spec gives a value, %q, without a name", vs[0])
		}
		if k != dlqKey {
			q.attrs[k] = vs[0]
			continue
		}
		dlq, count, ok := strings.Cut(vs[0], ":")
		n, err := strconv.Atoi(count)
		if !ok || dlq == "" || err != nil || n < 1 {
			return q, fmt.Errorf("dlq=%s: want dlq=NAME:N, N the maxReceiveCount, at least 1", vs[0])
		}
		q.dlq, q.maxReceives = dlq, n
	}
	return q, nil
}
