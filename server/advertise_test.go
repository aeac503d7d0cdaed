package server_test

import (
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// With Config.AdvertiseURL every queue URL the server hands out starts
// with it, whatever Host the request carried and whichever region it is
// for; a queue URL with any host is still accepted.
func TestAdvertiseURL(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	eng, err := engine.New(engine.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Config{Engine: eng, AdvertiseURL: "http://baton:9324/"}))
	t.Cleanup(func() {
		srv.Close()
		eng.Close()
		store.Close()
	})
	c := testutil.NewClient(srv.URL)
	const want = "http://baton:9324/000000000000/jobs"
	created, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
	if err != nil || aws.ToString(created.QueueUrl) != want {
		t.Fatalf("CreateQueue: %v, %v, want %s", created, err, want)
	}
	got, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("jobs")})
	if err != nil || aws.ToString(got.QueueUrl) != want {
		t.Errorf("GetQueueUrl: %v, %v, want %s", got, err, want)
	}
	list, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(list.QueueUrls) != 1 || list.QueueUrls[0] != want {
		t.Errorf("ListQueues: %v, %v, want [%s]", list, err, want)
	}
	// The advertised URL and the one the request's Host would have given
	// both reach the queue.
	for _, u := range []string{want, srv.URL + "/000000000000/jobs"} {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String("x")}); err != nil {
			t.Errorf("SendMessage to %s: %v", u, err)
		}
	}
	// A client signing for another region gets the URL as given too.
	eu := inRegion(c, "eu-west-1")
	created, err = eu.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
	if err != nil || aws.ToString(created.QueueUrl) != want {
		t.Errorf("CreateQueue in eu-west-1: %v, %v, want %s", created, err, want)
	}
}
