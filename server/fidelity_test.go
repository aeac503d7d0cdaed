package server_test

import (
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

// These tests pin answers Amazon SQS gives that Baton once gave otherwise
// (issue 20), over both wire protocols where the protocol matters.

// TestBooleanAttributesAnyCase: SQS reads a boolean attribute in any case
// (CloudFormation and the CDK send FifoQueue "True") and reports it back
// in lower case, as GetQueueAttributes always writes booleans (CreateQueue
// API reference: "Valid values: true, false").
func TestBooleanAttributesAnyCase(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	for i, v := range []string{"True", "TRUE", "tRuE"} {
		name := []string{"a.fifo", "b.fifo", "c.fifo"}[i]
		url := srv.MustCreateQueue(t, name, map[string]string{
			"FifoQueue": v, "ContentBasedDeduplication": v, "SqsManagedSseEnabled": v,
		})
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"FifoQueue", "ContentBasedDeduplication", "SqsManagedSseEnabled"} {
			if got := out.Attributes[n]; got != "true" {
				t.Errorf("FifoQueue=%s: %s = %q, want true", v, n, got)
			}
		}
		// The same request again is the same queue, not a conflict.
		if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name),
			Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": v}}); err != nil {
			t.Errorf("re-create %s: %v", name, err)
		}
	}
	url := srv.MustCreateQueue(t, "d.fifo", map[string]string{"FifoQueue": "true"})
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url,
		Attributes: map[string]string{"ContentBasedDeduplication": "TRUE", "SqsManagedSseEnabled": "False"}}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{"ContentBasedDeduplication", "SqsManagedSseEnabled"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Attributes["ContentBasedDeduplication"] != "true" || out.Attributes["SqsManagedSseEnabled"] != "false" {
		t.Errorf("after set: %v, want ContentBasedDeduplication true, SqsManagedSseEnabled false", out.Attributes)
	}
	// Still not a boolean: refused as before.
	_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("e.fifo"), Attributes: map[string]string{"FifoQueue": "yes"}})
	wantAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)

	// The Query protocol carries the same strings.
	q := newQueryClient(t)
	qurl := q.createQueue("q.fifo", "Attribute.1.Name", "FifoQueue", "Attribute.1.Value", "True")
	if got := q.attributes(qurl, "FifoQueue")["FifoQueue"]; got != "true" {
		t.Errorf("Query: FifoQueue = %q, want true", got)
	}
}
