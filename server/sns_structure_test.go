package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
)

// TestSNSStructuredMessageCarriesNoAttributes pins that a message published
// with MessageStructure=json is delivered without its message attributes,
// as AWS's developer guide says ("Message attributes are sent only when the
// message structure is String, not JSON") and AWS was seen to deliver it (a
// Lambda event's MessageAttributes {}): no MessageAttributes in the
// envelope, no SQS attributes on a raw copy, none in a Lambda event; a
// filter policy still reads the attributes published. A plain message's
// attributes still go on.
func TestSNSStructuredMessageCarriesNoAttributes(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "structured")
	envURL := srv.MustCreateQueue(t, "env", nil)
	mustSubscribe(t, c, topic, snsQueueARN("env"), map[string]string{"FilterPolicy": `{"kind":["refund"]}`})
	rawURL := srv.MustCreateQueue(t, "raw", nil)
	mustSubscribe(t, c, topic, snsQueueARN("raw"), map[string]string{"RawMessageDelivery": "true"})
	saleURL := srv.MustCreateQueue(t, "sales", nil)
	mustSubscribe(t, c, topic, snsQueueARN("sales"), map[string]string{"FilterPolicy": `{"kind":["sale"]}`})
	subscribeOther(t, c, topic, "lambda", lambdaEndpoint, nil)

	kind := map[string]snstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("refund")}}
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), MessageStructure: aws.String("json"),
		Message: aws.String(`{"default":"d","sqs":"s"}`), MessageAttributes: kind}); err != nil {
		t.Fatal(err)
	}
	if m := receiveCopy(t, srv.Client, envURL); strings.Contains(*m.Body, "MessageAttributes") || !strings.Contains(*m.Body, `"Message" : "s"`) {
		t.Errorf("envelope of a JSON-structured message = %s, want the sqs entry and no MessageAttributes", *m.Body)
	}
	if m := receiveCopy(t, srv.Client, rawURL); *m.Body != "s" || len(m.MessageAttributes) != 0 {
		t.Errorf("raw copy of a JSON-structured message = %q with attributes %v, want s and none", *m.Body, m.MessageAttributes)
	}
	if d := onlyDelivery(t, srv, "protocol=lambda"); !strings.Contains(d.Payload, `"MessageAttributes":{}`) {
		t.Errorf("Lambda event of a JSON-structured message = %s, want MessageAttributes {}", d.Payload)
	}
	out, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(saleURL)})
	if err != nil || len(out.Messages) != 0 {
		t.Errorf("the queue whose filter policy the attributes leave out got %v (%v)", out, err)
	}

	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("plain"), MessageAttributes: kind}); err != nil {
		t.Fatal(err)
	}
	if m := receiveCopy(t, srv.Client, envURL); !strings.Contains(*m.Body, `"kind" : {"Type":"String","Value":"refund"}`) {
		t.Errorf("envelope of a plain message = %s, want its attributes", *m.Body)
	}
	if m := receiveCopy(t, srv.Client, rawURL); aws.ToString(m.MessageAttributes["kind"].StringValue) != "refund" {
		t.Errorf("raw copy of a plain message has attributes %v, want kind", m.MessageAttributes)
	}
}
