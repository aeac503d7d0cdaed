package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/internal/testutil"
)

// Dead-letter queues and queue types, as the SQS Developer Guide puts it
// (sqs-configure-dead-letter-queue-redrive.html): a redrive's destination
// must be of the dead-letter queue's type, and a message moved from a FIFO
// queue into its dead-letter queue gets its message id as deduplication id.

// TestMoveTaskRefusesOtherQueueType: StartMessageMoveTask from a standard
// dead-letter queue into a FIFO queue, and from a FIFO one into a standard
// queue, is refused, and no task is started.
func TestMoveTaskRefusesOtherQueueType(t *testing.T) { onEveryStore(t, moveTaskRefusesOtherQueueType) }

func moveTaskRefusesOtherQueueType(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	srv.MustCreateQueue(t, "std-dlq", nil)
	srv.MustCreateQueue(t, "std-src", redrive("std-dlq", 1))
	srv.MustCreateQueue(t, "fifo-dlq.fifo", fifoAttrs())
	srv.MustCreateQueue(t, "fifo-src.fifo", mergeAttrs(fifoAttrs(), redrive("fifo-dlq.fifo", 1)))
	for _, tc := range []struct{ source, dest string }{
		{"std-dlq", "fifo-src.fifo"},
		{"fifo-dlq.fifo", "std-src"},
	} {
		_, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
			SourceArn: aws.String(arnPrefix + tc.source), DestinationArn: aws.String(arnPrefix + tc.dest)})
		wantAPIError(t, err, "InvalidParameterValue", 400)
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorMessage() != "Destination queue must be the same type of queue as the source queue." {
			t.Errorf("%s into %s: message %q", tc.source, tc.dest, ae.ErrorMessage())
		}
		out, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arnPrefix + tc.source)})
		if err != nil || len(out.Results) != 0 {
			t.Errorf("%s into %s: tasks %+v, %v; want none", tc.source, tc.dest, out, err)
		}
	}
	// Each type into its own is accepted.
	for _, tc := range []struct{ source, dest string }{{"std-dlq", "std-src"}, {"fifo-dlq.fifo", "fifo-src.fifo"}} {
		if _, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
			SourceArn: aws.String(arnPrefix + tc.source), DestinationArn: aws.String(arnPrefix + tc.dest)}); err != nil {
			t.Errorf("%s into %s: %v", tc.source, tc.dest, err)
		}
	}
}

func mergeAttrs(a, b map[string]string) map[string]string {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// TestFIFODeadLetterReplacesDeduplicationID: a message that a FIFO queue
// moves to its FIFO dead-letter queue shows its MessageId as its
// MessageDeduplicationId there, its group kept.
func TestFIFODeadLetterReplacesDeduplicationID(t *testing.T) {
	onEveryStore(t, fifoDeadLetterReplacesDeduplicationID)
}

func fifoDeadLetterReplacesDeduplicationID(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	dlq := srv.MustCreateQueue(t, "jobs-dlq.fifo", fifoAttrs())
	src := srv.MustCreateQueue(t, "jobs.fifo", mergeAttrs(fifoAttrs("VisibilityTimeout", "10"), redrive("jobs-dlq.fifo", 1)))
	sent := sendFIFO(t, c, src, "poison", "g1", "dedup-1")
	if got := receiveBodies(t, c, src, 1); len(got) != 1 || got[0].Attributes["MessageDeduplicationId"] != "dedup-1" {
		t.Fatalf("first receive: %+v, want the message with MessageDeduplicationId dedup-1", got)
	}
	srv.Clock.Advance(10 * time.Second) // the lease lapses
	receiveNone(t, c, src)              // the second receive moves it
	got := receiveBodies(t, c, dlq, 10)
	if len(got) != 1 || *got[0].MessageId != *sent.MessageId {
		t.Fatalf("dead-letter queue gave %d messages, want %s", len(got), *sent.MessageId)
	}
	a := got[0].Attributes
	if a[string(types.MessageSystemAttributeNameMessageDeduplicationId)] != *sent.MessageId || a["MessageGroupId"] != "g1" {
		t.Errorf("in the dead-letter queue: MessageDeduplicationId %q, MessageGroupId %q; want %s, g1",
			a["MessageDeduplicationId"], a["MessageGroupId"], *sent.MessageId)
	}
}
