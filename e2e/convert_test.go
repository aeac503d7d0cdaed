package e2e_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestConvertSQLiteDataDir starts the built server on a data directory the
// SQLite store of the release before wrote (the fixture of
// store/pebblestore) and checks, through the SDK, that its queues are
// served as they were, that the log says what the conversion did, that the
// SQLite files are gone, and that the converted store takes new messages.
// The fixture's messages were sent in January 2026, past any retention
// period now, so the server rightly drops them: their conversion is checked
// message by message in store/pebblestore.
func TestConvertSQLiteDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../store/pebblestore/testdata/sqlite-fixture")); err != nil {
		t.Fatal(err)
	}
	srv := startBatonArgs(t, "--account-id", "000000000000", "--data-dir", dir)
	if logs := srv.logs.String(); !strings.Contains(logs, "converted the SQLite store to the Pebble log") ||
		!strings.Contains(logs, "removed the converted SQLite store") {
		t.Errorf("the server's log does not say it converted the data directory:\n%s", logs)
	}
	for _, f := range []string{"baton.db", "baton.db-wal"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s after the conversion: %v, want it removed", f, err)
		}
	}

	c := crashClient(srv.URL)
	ctx := t.Context()
	list, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range list.QueueUrls {
		names = append(names, u[strings.LastIndex(u, "/")+1:])
	}
	for _, want := range []string{"orders", "jobs.fifo", "purged", "dlq"} {
		if !slices.Contains(names, want) {
			t.Errorf("ListQueues after the conversion: %v, missing %s", names, want)
		}
	}
	orders, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: orders.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameVisibilityTimeout}})
	if err != nil || attrs.Attributes["VisibilityTimeout"] != "45" {
		t.Errorf("orders' VisibilityTimeout after the conversion: %v, %v; want 45", attrs, err)
	}
	tags, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: orders.QueueUrl})
	if err != nil || tags.Tags["team"] != "billing" {
		t.Errorf("orders' tags after the conversion: %v, %v; want team=billing", tags, err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: orders.QueueUrl, MessageBody: aws.String("after")}); err != nil {
		t.Fatal(err)
	}
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: orders.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "after" {
		t.Errorf("receive from the converted queue: %+v, %v; want the message sent after", got, err)
	}
}
