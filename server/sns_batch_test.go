package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
)

func batchEntry(id, msg string) snstypes.PublishBatchRequestEntry {
	return snstypes.PublishBatchRequestEntry{Id: aws.String(id), Message: aws.String(msg)}
}

// TestSNSPublishBatch: every entry reaches every subscribed queue, each
// with its own MessageId as the answer gives it, and Failed is present and
// empty (AWS's <Failed/>).
func TestSNSPublishBatch(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "batch")
	qURL := srv.MustCreateQueue(t, "bq", nil)
	mustSubscribe(t, c, topic, snsQueueARN("bq"), map[string]string{"RawMessageDelivery": "true"})
	out, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		batchEntry("one", "first"), batchEntry("two", "second"),
		{Id: aws.String("three"), Message: aws.String("third"),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed == nil || len(out.Failed) != 0 {
		t.Errorf("Failed = %v, want present and empty", out.Failed)
	}
	if len(out.Successful) != 3 {
		t.Fatalf("Successful = %d entries, want 3", len(out.Successful))
	}
	ids := map[string]string{}
	for _, s := range out.Successful {
		ids[*s.Id] = *s.MessageId
	}
	if len(ids) != 3 || ids["one"] == ids["two"] || ids["one"] == "" {
		t.Errorf("MessageIds %v, want three different", ids)
	}
	got, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(qURL), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]bool{}
	for _, m := range got.Messages {
		bodies[*m.Body] = true
		if *m.Body == "third" && (m.MessageAttributes["k"].StringValue == nil || *m.MessageAttributes["k"].StringValue != "v") {
			t.Errorf("third entry's attributes = %v", m.MessageAttributes)
		}
	}
	if len(got.Messages) != 3 || !bodies["first"] || !bodies["second"] || !bodies["third"] {
		t.Errorf("the queue holds %v, want the three entries", bodies)
	}
}

// TestSNSPublishBatchRefusals pins the refusals of a whole batch, with
// AWS's codes and texts; an entry Publish would refuse refuses the batch.
func TestSNSPublishBatchRefusals(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "batchrefusals")
	var eleven []snstypes.PublishBatchRequestEntry
	for i := range 11 {
		eleven = append(eleven, batchEntry(fmt.Sprintf("e%d", i), "m"))
	}
	long := strings.Repeat("x", 81)
	for _, tc := range []struct {
		name    string
		entries []snstypes.PublishBatchRequestEntry
		code    string
		msg     string
	}{
		{"eleven", eleven, "TooManyEntriesInBatchRequest", "The batch request contains more entries than permissible."},
		{"same ids", []snstypes.PublishBatchRequestEntry{batchEntry("a", "m"), batchEntry("a", "n")},
			"BatchEntryIdsNotDistinct", "Two or more batch entries in the request have the same Id."},
		{"long id", []snstypes.PublishBatchRequestEntry{batchEntry(long, "m")},
			"InvalidBatchEntryId", "The Id of a batch entry in the batch request is too long: " + long},
		{"bad id", []snstypes.PublishBatchRequestEntry{batchEntry("a.b", "m")},
			"InvalidBatchEntryId", "The Id of a batch entry in the batch request contains an impermissible character: a.b"},
		{"too long together", []snstypes.PublishBatchRequestEntry{batchEntry("a", strings.Repeat("x", 200000)), batchEntry("b", strings.Repeat("x", 62145))},
			"BatchRequestTooLong", "The length of all the messages put together is more than the limit."},
		{"an empty message", []snstypes.PublishBatchRequestEntry{batchEntry("a", "m"), batchEntry("b", "")},
			"InvalidParameter", "Invalid parameter: Empty message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: tc.entries})
			wantSNSError(t, err, tc.code, 400, tc.msg)
		})
	}
	_, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topicARN("none")),
		PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{batchEntry("a", "m")}})
	wantSNSError(t, err, "NotFound", 404, "Topic does not exist")
}
