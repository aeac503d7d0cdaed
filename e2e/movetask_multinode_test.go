package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// TestMoveTaskMultiNodeTakeover starts a slow message move task on one of
// three `baton serve` nodes sharing a database, kills that node with
// SIGKILL midway, and checks that another node finishes the task: COMPLETED,
// every message in the destination exactly once, the count right, and
// every live node listing the task alike.
func TestMoveTaskMultiNodeTakeover(t *testing.T) {
	skipnote.SkipUnlessLong(t, "a move task taken over when its node dies")
	t.Parallel()
	nodes := startMultiNodes(t, pgtest.MustStart(t), 3)
	arn := func(name string) string { return "arn:aws:sqs:us-east-1:" + account + ":" + name }
	mnCreateQueue(t, nodes[0], "mt-dlq", nil)
	mnCreateQueue(t, nodes[0], "mt-dest", nil)
	mnCreateQueue(t, nodes[0], "mt-src", map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":"3"}`, arn("mt-dlq")),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const n, rate = 40, 4
	var bodies []string
	for b := 0; b < n; b += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for i := b; i < b+10; i++ {
			body := fmt.Sprintf("move-%02d", i)
			bodies = append(bodies, body)
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(body)})
		}
		out, err := nodes[0].client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(nodes[0].queueURL("mt-dlq")), Entries: entries})
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("send: %v, %+v", err, out)
		}
	}
	start, err := nodes[0].client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(arn("mt-dlq")), DestinationArn: aws.String(arn("mt-dest")),
		MaxNumberOfMessagesPerSecond: aws.Int32(rate),
	})
	if err != nil || aws.ToString(start.TaskHandle) == "" {
		t.Fatalf("StartMessageMoveTask: %v, %+v", err, start)
	}
	list := func(node *mnNode) (types.ListMessageMoveTasksResultEntry, error) {
		out, err := node.client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arn("mt-dlq"))})
		if err != nil {
			return types.ListMessageMoveTasksResultEntry{}, err
		}
		if len(out.Results) != 1 {
			return types.ListMessageMoveTasksResultEntry{}, fmt.Errorf("%d tasks listed, want 1", len(out.Results))
		}
		return out.Results[0], nil
	}
	testutil.CheckFor(t, 30*time.Second, func() error {
		r, err := list(nodes[1])
		if err == nil && r.ApproximateNumberOfMessagesMoved < 2*rate {
			err = fmt.Errorf("moved %d", r.ApproximateNumberOfMessagesMoved)
		}
		return err
	})
	if _, err := nodes[1].client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arn("mt-dlq"))}); err == nil {
		t.Fatal("a second task of the source started on another node")
	}
	nodes[0].kill(t)
	moved, _ := list(nodes[1])
	t.Logf("killed the task's node with %d of %d moved", moved.ApproximateNumberOfMessagesMoved, n)

	// A message the dead node had leased but not moved comes back after the
	// move lease (30 s); the rest go at the task's rate.
	testutil.CheckFor(t, 90*time.Second, func() error {
		a, err := list(nodes[1])
		if err != nil {
			return err
		}
		b, err := list(nodes[2])
		if err != nil {
			return err
		}
		if a.ApproximateNumberOfMessagesMoved != b.ApproximateNumberOfMessagesMoved || aws.ToString(a.Status) != aws.ToString(b.Status) {
			return fmt.Errorf("nodes disagree: %s %d and %s %d", aws.ToString(a.Status), a.ApproximateNumberOfMessagesMoved,
				aws.ToString(b.Status), b.ApproximateNumberOfMessagesMoved)
		}
		if aws.ToString(a.Status) != "COMPLETED" {
			return fmt.Errorf("status %s, %d moved", aws.ToString(a.Status), a.ApproximateNumberOfMessagesMoved)
		}
		if a.ApproximateNumberOfMessagesMoved != n || a.ApproximateNumberOfMessagesToMove == nil || *a.ApproximateNumberOfMessagesToMove != n {
			return fmt.Errorf("COMPLETED with %d moved of %v, want %d of %d", a.ApproximateNumberOfMessagesMoved,
				aws.ToInt64(a.ApproximateNumberOfMessagesToMove), n, n)
		}
		return nil
	})

	var got []string
	for {
		out, err := nodes[2].client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(nodes[2].queueURL("mt-dest")), MaxNumberOfMessages: 10, VisibilityTimeout: 600,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			got = append(got, aws.ToString(m.Body))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, bodies) {
		t.Errorf("mt-dest holds %d messages %v, want each of the %d sent once", len(got), got, n)
	}
	mnWantCounts(t, nodes[1:], "mt-dlq", [3]string{"0", "0", "0"})
}
