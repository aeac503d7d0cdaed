package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
)

// CreateQueue on an existing queue with tags that differ from the queue's
// fails like a differing attribute does, even if the queue has no tags:
// SQS neither re-tags the queue nor ignores the tags silently
// (Bogdanp/dramatiq_sqs#13, awslabs/amazon-sqs-java-temporary-queues-client#70).
// Without tags, or with the queue's very tags, it returns the queue.
func TestCreateQueueExistingWithDifferentTags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, _ := newEngine(t)
	const account = "000000000000"
	create := func(name string, tags map[string]string) error {
		_, err := e.CreateQueue(ctx, engine.CreateQueueParams{Account: account, Name: name, Tags: tags})
		return err
	}
	if err := create("tagged", map[string]string{"team": "billing"}); err != nil {
		t.Fatal(err)
	}
	if err := create("untagged", nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tags map[string]string
		want baton.ErrorCode
	}{
		{"tagged", nil, ""},
		{"tagged", map[string]string{"team": "billing"}, ""},
		{"tagged", map[string]string{"team": "ops"}, baton.ErrQueueNameExists},
		{"tagged", map[string]string{"team": "billing", "env": "prod"}, baton.ErrQueueNameExists},
		{"untagged", nil, ""},
		{"untagged", map[string]string{"team": "billing"}, baton.ErrQueueNameExists},
	} {
		err := create(c.name, c.tags)
		if got := baton.AsError(err); (err == nil) != (c.want == "") || err != nil && got.Code != c.want {
			t.Errorf("CreateQueue(%s, tags %v): %v; want %q", c.name, c.tags, err, c.want)
		}
	}
	if got, _ := e.ListQueueTags(ctx, engine.QueueRef{Account: account, Name: "tagged"}); len(got) != 1 || got["team"] != "billing" {
		t.Errorf("tags after the refused creates: %v; want only team=billing", got)
	}
}

// A message a move task takes back from a dead-letter queue starts a new
// retention period: "The redrive task resets the retention period. All
// redriven messages are considered new messages" with a new enqueue time
// (SQS Developer Guide, "Configure a dead-letter queue redrive"). It used to
// keep its first SentAt, so it expired as soon as it arrived when it had
// spent longer than the destination's retention period in both queues.
func TestMoveTaskResetsRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, clock := newEngine(t)
	dlq := mkQueue(t, e, "dlq", map[string]string{"MessageRetentionPeriod": "1209600"})
	arn := e.ARN(dlq.Account, dlq.Name)
	src := mkQueue(t, e, "src", map[string]string{
		"MessageRetentionPeriod": "3600",
		"RedrivePolicy":          `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":1}`,
	})
	if _, err := e.SendMessage(ctx, src, engine.SendParams{Body: "poison"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.ReceiveMessage(ctx, src, engine.ReceiveParams{VisibilityTimeout: ptr(0)}); len(got) != 1 {
		t.Fatal("first receive")
	}
	if got, _ := e.ReceiveMessage(ctx, src, engine.ReceiveParams{}); len(got) != 0 {
		t.Fatal("second receive should dead-letter")
	}
	clock.Advance(2 * time.Hour) // longer than the source's retention period
	if _, err := e.StartMessageMoveTask(ctx, engine.StartMessageMoveTaskParams{Account: dlq.Account, SourceARN: arn}); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 5*time.Second, func() error {
		ts, _ := e.ListMessageMoveTasks(ctx, "", dlq.Account, arn, nil)
		if len(ts) == 0 || ts[0].Status != engine.TaskCompleted {
			return fmt.Errorf("task not completed: %+v", ts)
		}
		return nil
	})
	moveTime := clock.Now()
	clock.Advance(time.Minute)
	got, err := e.ReceiveMessage(ctx, src, engine.ReceiveParams{AttributeNames: []string{"SentTimestamp"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("redriven message received a minute after the move: %d messages; want it, its retention period restarted", len(got))
	}
	if got, want := got[0].Attributes["SentTimestamp"], fmt.Sprint(moveTime.UnixMilli()); got != want {
		t.Errorf("SentTimestamp of the redriven message = %s, want the move's time %s", got, want)
	}
}
