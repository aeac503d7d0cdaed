package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// TestResetExportImport drives the test-state commands of the built
// binary against queues an SDK made: `baton export` changes nothing,
// `baton reset` leaves no queue, `baton import` and `serve --import` bring
// back what was exported, leases and receive counts included.
func TestResetExportImport(t *testing.T) {
	t.Parallel()
	p := startBaton(t)
	c := testutil.NewClient(p.URL)
	ctx := context.Background()
	baton := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(batonBin, append(args, "--endpoint", p.URL)...).CombinedOutput()
		if err != nil {
			t.Fatalf("baton %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	create := func(name string, attrs map[string]string) string {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs, Tags: map[string]string{"suite": "e2e"}})
		if err != nil {
			t.Fatal(err)
		}
		return *out.QueueUrl
	}
	send := func(in *sqs.SendMessageInput) {
		if _, err := c.SendMessage(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	create("dead", nil)
	work := create("work", map[string]string{"VisibilityTimeout": "600",
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:` + account + `:dead","maxReceiveCount":"2"}`})
	fifo := create("orders.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "600"})
	send(&sqs.SendMessageInput{QueueUrl: &work, MessageBody: aws.String("leased"),
		MessageAttributes: map[string]types.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("fruit")}}})
	send(&sqs.SendMessageInput{QueueUrl: &work, MessageBody: aws.String("waiting")})
	send(&sqs.SendMessageInput{QueueUrl: &work, MessageBody: aws.String("later"), DelaySeconds: 900})
	for _, b := range []string{"o1", "o2"} {
		send(&sqs.SendMessageInput{QueueUrl: &fifo, MessageBody: aws.String(b), MessageGroupId: aws.String("g")})
	}
	for _, q := range []string{work, fifo} {
		got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 1})
		if err != nil || len(got.Messages) != 1 {
			t.Fatalf("receive %s: %v %v", q, err, got)
		}
	}
	counts := func() map[string][3]string {
		out := map[string][3]string{}
		for _, name := range []string{"dead", "work", "orders.fifo"} {
			a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(p.queueURL(name)),
				AttributeNames: []types.QueueAttributeName{"All"}})
			if err != nil {
				t.Fatalf("attributes of %s: %v", name, err)
			}
			out[name] = [3]string{a.Attributes["ApproximateNumberOfMessages"], a.Attributes["ApproximateNumberOfMessagesNotVisible"], a.Attributes["ApproximateNumberOfMessagesDelayed"]}
		}
		return out
	}
	want := map[string][3]string{"dead": {"0", "0", "0"}, "work": {"1", "1", "1"}, "orders.fifo": {"1", "1", "0"}}
	if got := counts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("counts before the export: %v, want %v", got, want)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "state.json")
	baton("export", file)
	exported := readState(t, file)
	if got := counts(); !reflect.DeepEqual(got, want) {
		t.Errorf("counts after the export: %v, want %v", got, want)
	}
	baton("export", filepath.Join(dir, "again.json"))
	if again := readState(t, filepath.Join(dir, "again.json")); !reflect.DeepEqual(again.Queues, exported.Queues) {
		t.Errorf("a second export differs from the first: the first changed something")
	}
	for _, q := range exported.Queues {
		for _, m := range q.Messages {
			if m.Body == "leased" && (m.State != "inflight" || m.ReceiveCount != 1 || m.MessageAttributes["kind"].StringValue != "fruit") {
				t.Errorf("exported leased message: %+v", m)
			}
		}
	}

	if out := baton("reset"); !strings.Contains(out, "deleted 3 queues") {
		t.Errorf("baton reset: %q", out)
	}
	if list, err := c.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil || len(list.QueueUrls) != 0 {
		t.Fatalf("after reset: %v %v, want no queues", err, list.QueueUrls)
	}
	if out := baton("import", file); !strings.Contains(out, "imported 3 queues, 5 messages") {
		t.Errorf("baton import: %q", out)
	}
	if got := counts(); !reflect.DeepEqual(got, want) {
		t.Errorf("counts after the import: %v, want %v", got, want)
	}
	tags, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: &work})
	if err != nil || tags.Tags["suite"] != "e2e" {
		t.Errorf("tags after the import: %v %v", err, tags)
	}
	baton("export", filepath.Join(dir, "loaded.json"))
	if loaded := readState(t, filepath.Join(dir, "loaded.json")); !reflect.DeepEqual(loaded.Queues, exported.Queues) {
		t.Errorf("the imported state differs from the exported one")
	}

	// A server started from the file holds the same.
	p2 := startBatonArgs(t, "--account-id", account, "--store", "memory", "--import", file)
	out, err := exec.Command(batonBin, "export", filepath.Join(dir, "started.json"), "--endpoint", p2.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("export of the started server: %v\n%s", err, out)
	}
	if started := readState(t, filepath.Join(dir, "started.json")); !reflect.DeepEqual(started.Queues, exported.Queues) {
		t.Errorf("a server started with --import differs from the export")
	}
}

func readState(t *testing.T, path string) *server.StateJSON {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := server.ReadState(f)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
