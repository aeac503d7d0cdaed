package cli_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

// queueAttrs reads every attribute of a queue through the SDK.
func queueAttrs(t *testing.T, s *testutil.Server, url string) map[string]string {
	t.Helper()
	out, err := s.Client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes %s: %v", url, err)
	}
	return out.Attributes
}

func TestCLIQueueCreate(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	got := mustSucceed(t, s.URL, "queue", "create", "jobs", "-a", "VisibilityTimeout=60", "--attribute", "DelaySeconds=2", "-t", "team=billing")
	url := s.URL + "/" + testutil.Account + "/jobs"
	if got != url+"\n" {
		t.Fatalf("queue create: got %q, want the URL %q", got, url)
	}
	attrs := queueAttrs(t, s, url)
	if attrs["VisibilityTimeout"] != "60" || attrs["DelaySeconds"] != "2" {
		t.Errorf("attributes: got %v, want VisibilityTimeout 60 and DelaySeconds 2", attrs)
	}
	tags, err := s.Client.ListQueueTags(context.Background(), &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
	if err != nil || tags.Tags["team"] != "billing" {
		t.Errorf("tags: got %v, %v, want team=billing", tags, err)
	}
	// A .fifo name implies FifoQueue=true.
	mustSucceed(t, s.URL, "queue", "create", "orders.fifo", "-a", "ContentBasedDeduplication=true")
	if a := queueAttrs(t, s, s.URL+"/"+testutil.Account+"/orders.fifo"); a["FifoQueue"] != "true" || a["ContentBasedDeduplication"] != "true" {
		t.Errorf("orders.fifo: got %v, want a FIFO queue with content-based deduplication", a)
	}

	mustFail(t, s.URL, "InvalidParameterValue", "queue", "create", "no spaces allowed")
	mustFail(t, s.URL, `--attribute "VisibilityTimeout": want NAME=VALUE`, "queue", "create", "q", "-a", "VisibilityTimeout")
}

func TestCLIQueueList(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	for _, name := range []string{"alpha", "alpine", "beta"} {
		s.MustCreateQueue(t, name, nil)
	}
	base := s.URL + "/" + testutil.Account + "/"
	if got, want := mustSucceed(t, s.URL, "queue", "list"), base+"alpha\n"+base+"alpine\n"+base+"beta\n"; got != want {
		t.Errorf("queue list: got %q, want %q", got, want)
	}
	if got, want := mustSucceed(t, s.URL, "queue", "list", "--prefix", "alp"), base+"alpha\n"+base+"alpine\n"; got != want {
		t.Errorf("queue list --prefix alp: got %q, want %q", got, want)
	}

	// Nothing listens on a port just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	mustFail(t, s.URL, "cannot reach the server", "queue", "list", "--endpoint", closed)
}

func TestCLIQueueGet(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "jobs", map[string]string{"VisibilityTimeout": "45"})

	out := mustSucceed(t, s.URL, "queue", "get", "jobs")
	for _, want := range []string{"VisibilityTimeout ", "45\n", "QueueArn ", "arn:aws:sqs:us-east-1:" + testutil.Account + ":jobs\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("queue get: missing %q in\n%s", want, out)
		}
	}
	var doc struct {
		QueueURL   string `json:"QueueUrl"`
		Attributes map[string]string
	}
	out = mustSucceed(t, s.URL, "queue", "get", url, "-a", "VisibilityTimeout", "-a", "DelaySeconds", "--json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("queue get --json: %v\n%s", err, out)
	}
	if doc.QueueURL != url || len(doc.Attributes) != 2 || doc.Attributes["VisibilityTimeout"] != "45" || doc.Attributes["DelaySeconds"] != "0" {
		t.Errorf("queue get --json: got %+v, want %s with VisibilityTimeout 45 and DelaySeconds 0 only", doc, url)
	}

	mustFail(t, s.URL, "baton: queue nosuch: AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist.", "queue", "get", "nosuch")
}

func TestCLIQueueSet(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "jobs", nil)
	if out := mustSucceed(t, s.URL, "queue", "set", "jobs", "-a", "VisibilityTimeout=120", "-a", "MaximumMessageSize=2048"); out != "" {
		t.Errorf("queue set printed %q, want nothing", out)
	}
	if a := queueAttrs(t, s, url); a["VisibilityTimeout"] != "120" || a["MaximumMessageSize"] != "2048" {
		t.Errorf("after queue set: got %v", a)
	}

	mustFail(t, s.URL, "InvalidAttributeValue: Invalid value for the parameter VisibilityTimeout.", "queue", "set", "jobs", "-a", "VisibilityTimeout=soon")
	mustFail(t, s.URL, "nothing to set", "queue", "set", "jobs")
}

func TestCLIQueuePurge(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "jobs", nil)
	for range 3 {
		if _, err := s.Client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
			t.Fatal(err)
		}
	}
	mustSucceed(t, s.URL, "queue", "purge", "jobs")
	if n := queueAttrs(t, s, url)["ApproximateNumberOfMessages"]; n != "0" {
		t.Errorf("after purge: ApproximateNumberOfMessages %s, want 0", n)
	}
	// A second purge within 60 s is refused.
	mustFail(t, s.URL, "PurgeQueueInProgress", "queue", "purge", url)
}

func TestCLIQueueDelete(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "jobs", nil)
	mustSucceed(t, s.URL, "queue", "delete", url)
	if out := mustSucceed(t, s.URL, "queue", "list"); out != "" {
		t.Errorf("queue list after delete: got %q, want nothing", out)
	}
	mustFail(t, s.URL, "does not exist", "queue", "delete", "jobs")
}

// An error of a command on one queue or topic names it as the user gave
// it (name or URL), first: `queue set`, `create`, `purge` and `delete`,
// `get`, `send`, `receive`, and the topic commands said only the SQS or SNS
// error. A NAME=VALUE given as an argument instead of -a gets the command
// line that does it.
func TestCLIErrorsNameTheQueueOrTopic(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "jobs", nil)
	mustSucceed(t, s.URL, "topic", "create", "news")
	mustSucceed(t, s.URL, "queue", "purge", "jobs")
	gone := s.MustCreateQueue(t, "gone", nil)
	mustSucceed(t, s.URL, "queue", "delete", "gone")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"queue", "set", "jobs", "-a", "VisibilityTimeout=99999"}, "baton: queue jobs: InvalidAttributeValue: Invalid value for the parameter VisibilityTimeout."},
		{[]string{"queue", "set", url, "-a", "Bogus=1"}, "baton: queue " + url + ": InvalidAttributeName: Unknown Attribute Bogus."},
		{[]string{"queue", "create", "jobs", "-a", "VisibilityTimeout=5"}, "baton: queue jobs: QueueAlreadyExists: A queue already exists with the same name and a different value for attribute VisibilityTimeout"},
		{[]string{"queue", "create", "bad!"}, "baton: queue bad!: InvalidParameterValue: Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"},
		{[]string{"queue", "purge", url}, "baton: queue " + url + ": AWS.SimpleQueueService.PurgeQueueInProgress: Only one PurgeQueue operation on jobs is allowed every 60 seconds."},
		{[]string{"queue", "delete", gone}, "baton: queue " + gone + ": AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist."},
		{[]string{"queue", "get", "jobs", "-a", "Bogus"}, "baton: queue jobs: InvalidAttributeName: Unknown Attribute Bogus."},
		{[]string{"send", gone, "hi"}, "baton: queue " + gone + ": AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist."},
		{[]string{"receive", gone, "--wait", "0"}, "baton: queue " + gone + ": AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist."},
		{[]string{"topic", "create", "bad!"}, "baton: topic bad!: InvalidParameter: Invalid parameter: Topic Name"},
		{[]string{"topic", "subscribe", "news", "jobs", "-a", "FilterPolicy=notjson"}, "baton: topic news: InvalidParameter: Invalid parameter: Attributes Reason: FilterPolicy: failed to parse JSON. invalid character 'o' in literal null (expecting 'u')"},
		{[]string{"queue", "set", "jobs", "VisibilityTimeout=60", "DelaySeconds=5"}, "baton: queue set takes NAME=VALUE as -a NAME=VALUE, not as an argument: baton queue set jobs -a VisibilityTimeout=60 -a DelaySeconds=5"},
		{[]string{"topic", "create", "news", "DisplayName=News"}, "baton: topic create takes NAME=VALUE as -a NAME=VALUE, not as an argument: baton topic create news -a DisplayName=News"},
	} {
		r := runCLI(t, cliEnv(t, "BATON_ENDPOINT="+s.URL), nil, tt.args...)
		if r.code != 1 || r.stderr != tt.want+"\n" {
			t.Errorf("baton %s: %v\nwant exit 1 and the one line %q", strings.Join(tt.args, " "), r, tt.want)
		}
	}
}
