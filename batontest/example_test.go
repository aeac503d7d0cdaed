package batontest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/batontest"
)

// A test starts a server with New, which stops it when the test ends, makes
// its queues with Queue and hands Client to the code under test.
func ExampleNew() {
	// The body of func TestOrders(t *testing.T):
	var t *testing.T

	srv := batontest.New(t)
	orders := srv.Queue(t, "orders?VisibilityTimeout=30")
	_, err := srv.Client().SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(orders), MessageBody: aws.String(`{"id":1}`),
	})
	if err != nil {
		t.Fatal(err)
	}
}

// With a fake clock a lease lapses the moment the test moves the clock past
// it: no sleeping, whatever the machine's load.
func Example_fakeClock() {
	srv, err := batontest.Start(batontest.WithFakeClock(time.Time{}))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	jobs, err := srv.CreateQueue(ctx, "jobs?VisibilityTimeout=30")
	if err != nil {
		log.Fatal(err)
	}
	client := srv.Client()
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(jobs), MessageBody: aws.String("hello")}); err != nil {
		log.Fatal(err)
	}
	receive := func() {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(jobs),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if err != nil {
			log.Fatal(err)
		}
		for _, m := range out.Messages {
			fmt.Printf("%s: %q, receive %s\n", srv.Clock().Now().Sub(batontest.Epoch), *m.Body, m.Attributes["ApproximateReceiveCount"])
		}
		if len(out.Messages) == 0 {
			fmt.Printf("%s: nothing\n", srv.Clock().Now().Sub(batontest.Epoch))
		}
	}
	receive()
	srv.Clock().Advance(29 * time.Second)
	receive()
	srv.Clock().Advance(time.Second)
	receive()
	// Output:
	// 0s: "hello", receive 1
	// 29s: nothing
	// 30s: "hello", receive 2
}

// A spec's dlq=NAME:N gives the queue a dead-letter queue, created with it,
// which a message reaches on its (N+1)th receive.
func ExampleServer_Queue() {
	srv, err := batontest.Start(batontest.WithFakeClock(time.Time{}))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	jobs, err := srv.CreateQueue(ctx, "jobs?VisibilityTimeout=10&dlq=jobs-dlq:1")
	if err != nil {
		log.Fatal(err)
	}
	client := srv.Client()
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(jobs), MessageBody: aws.String("poison")}); err != nil {
		log.Fatal(err)
	}
	for _, queue := range []string{jobs, jobs, srv.URL() + "/" + batontest.Account + "/jobs-dlq"} {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue)})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d message(s)\n", queue[len(srv.URL()):], len(out.Messages))
		srv.Clock().Advance(10 * time.Second) // the lease lapses
	}
	// Output:
	// /000000000000/jobs: 1 message(s)
	// /000000000000/jobs: 0 message(s)
	// /000000000000/jobs-dlq: 1 message(s)
}

// With keys the server checks every request's signature. Client signs with
// the first key; ClientFor signs with any, a wrong one included.
func ExampleWithCredentials() {
	srv, err := batontest.Start(batontest.WithCredentials("AKIDEXAMPLE", "example-secret"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	if _, err := srv.Client().ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		log.Fatal(err)
	}
	_, err = srv.ClientFor("AKIDEXAMPLE", "a-wrong-secret").ListQueues(ctx, &sqs.ListQueuesInput{})
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.ErrorCode())
	}
	// Output:
	// SignatureDoesNotMatch
}
