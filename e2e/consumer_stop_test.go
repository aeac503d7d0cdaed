package e2e_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/internal/testutil"
)

// pollCounter is an SQS client that counts the receives in flight.
type pollCounter struct {
	*sqs.Client
	inFlight atomic.Int32
}

func (p *pollCounter) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	return p.Client.ReceiveMessage(ctx, in, opts...)
}

// A stop costs a message at most the receive it was held under, on the
// built `baton serve` with the Go consumer: ten receivers long-poll while
// one holds the queue's only message (maxReceiveCount 5), and the consumer
// is stopped by cancelling Run's context. Five consumers in turn: each
// one's handler sees the message's ApproximateReceiveCount one higher than
// the last (its own receive, none spent by the stop), no stop reports a
// late arrival, and the message is never dead-lettered.
func TestConsumerStopCostsOneReceive(t *testing.T) {
	t.Parallel()
	p := startBaton(t)
	c := testutil.NewClient(p.URL)
	ctx := context.Background()
	dlq, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("stop-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	arn, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("stop"), Attributes: map[string]string{
		"VisibilityTimeout": "30",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, arn.Attributes["QueueArn"]),
	}})
	if err != nil {
		t.Fatal(err)
	}
	url := *q.QueueUrl
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("job")}); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 5; run++ {
		client := &pollCounter{Client: c}
		seen := make(chan int, 10)
		cons, err := consumer.New(client, url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			n, _ := strconv.Atoi(d.Message.Attributes["ApproximateReceiveCount"])
			seen <- n
			<-ctx.Done()
			return context.Cause(ctx)
		}), consumer.WithConcurrency(100), consumer.WithReceivers(10), consumer.WithWaitTime(2*time.Second),
			consumer.WithShutdownTimeout(20*time.Second), consumer.WithShutdownReserve(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		reports := make(chan consumer.Report, 1)
		go func() {
			r, err := cons.Run(runCtx)
			if err != nil {
				t.Errorf("run %d: Run: %v", run, err)
			}
			reports <- r
		}()
		select {
		case n := <-seen:
			if n != run {
				t.Errorf("run %d: ApproximateReceiveCount %d, want %d (one receive a run)", run, n, run)
			}
		case <-time.After(30 * time.Second):
			stop()
			t.Fatalf("run %d: the message was not handed out within 30 s", run)
		}
		testutil.CheckFor(t, 10*time.Second, func() error {
			if n := client.inFlight.Load(); n < 10 {
				return fmt.Errorf("%d receives in flight, want the ten receivers polling", n)
			}
			return nil
		})
		stop()
		var r consumer.Report
		select {
		case r = <-reports:
		case <-time.After(60 * time.Second):
			t.Fatalf("run %d: Run did not return within 60 s of the stop", run)
		}
		if r.LateArrivals != 0 || r.Released != 1 || r.ReleaseFailed != 0 || r.ReleaseDelay != 0 {
			t.Errorf("run %d: report %+v, want the one message released once, after the receives ended", run, r)
		}
		if extra := len(seen); extra != 0 {
			t.Errorf("run %d: the handler ran %d more times", run, extra)
		}
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatal(err)
	}
	if n := attrs.Attributes["ApproximateNumberOfMessages"]; n != "0" {
		t.Errorf("dead-lettered: %s messages, want 0 (the message never failed)", n)
	}
}
