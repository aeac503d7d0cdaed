package cli_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

// receiveOne receives a message through the SDK, with all its attributes.
func receiveOne(t *testing.T, s *testutil.Server, url string) types.Message {
	t.Helper()
	out, err := s.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("ReceiveMessage: got %v, %v, want one message", out, err)
	}
	return out.Messages[0]
}

var uuidLine = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$`)

func TestCLISend(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "jobs", nil)

	// The body from an argument, with attributes of each type; a value
	// without a known type prefix is a String.
	id := mustSucceed(t, s.URL, "send", "jobs", "hello, queue",
		"-a", "Kind=String:order", "-a", "Priority=Number:3", "--attribute", "Blob=Binary:AAEC", "-a", "Link=https://example.com/x")
	if !uuidLine.MatchString(id) {
		t.Fatalf("send printed %q, want a message id", id)
	}
	m := receiveOne(t, s, url)
	if aws.ToString(m.MessageId)+"\n" != id || aws.ToString(m.Body) != "hello, queue" {
		t.Errorf("received %s %q, want %s %q", aws.ToString(m.MessageId), aws.ToString(m.Body), id, "hello, queue")
	}
	if _, err := s.Client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Kind": "String order", "Priority": "Number 3", "Blob": "Binary \x00\x01\x02", "Link": "String https://example.com/x"}
	for name, w := range want {
		a := m.MessageAttributes[name]
		got := aws.ToString(a.DataType) + " " + aws.ToString(a.StringValue) + string(a.BinaryValue)
		if got != w {
			t.Errorf("attribute %s: got %q, want %q", name, got, w)
		}
	}

	// The body from standard input, byte for byte, and --delay.
	body := "line one\nline two\n"
	r := runCLI(t, cliEnv(t, "BATON_ENDPOINT="+s.URL), strings.NewReader(body), "send", url, "--delay", "30", "--json")
	if r.code != 0 {
		t.Fatalf("send from stdin: %v", r)
	}
	var res struct{ MessageId, MD5OfMessageBody string }
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("send --json: %v\n%s", err, r.stdout)
	}
	sum := md5.Sum([]byte(body))
	if res.MD5OfMessageBody != hex.EncodeToString(sum[:]) || res.MessageId == "" {
		t.Errorf("send --json: got %+v, want the MD5 of %q", res, body)
	}
	if n := queueAttrs(t, s, url)["ApproximateNumberOfMessagesDelayed"]; n != "1" {
		t.Errorf("after send --delay 30: ApproximateNumberOfMessagesDelayed %s, want 1", n)
	}
	s.Clock.Advance(30 * time.Second)
	if m := receiveOne(t, s, url); aws.ToString(m.Body) != body {
		t.Errorf("stdin body: got %q, want %q", aws.ToString(m.Body), body)
	}

	// FIFO: group and deduplication ids; the sequence number follows the id.
	fifo := s.MustCreateQueue(t, "orders.fifo", map[string]string{"FifoQueue": "true"})
	out := mustSucceed(t, s.URL, "send", "orders.fifo", "paid", "--group", "customer-42", "--dedup-id", "order-7")
	if f := strings.Fields(out); len(f) != 2 || !uuidLine.MatchString(f[0]+"\n") || f[1] == "" {
		t.Errorf("send to FIFO printed %q, want a message id and a sequence number", out)
	}
	m = receiveOne(t, s, fifo)
	if m.Attributes["MessageGroupId"] != "customer-42" || m.Attributes["MessageDeduplicationId"] != "order-7" {
		t.Errorf("FIFO message attributes: got %v", m.Attributes)
	}

	// No body and standard input from /dev/null (a script, a CI job):
	// no hint to type one, and an error that says where the body was
	// looked for.
	r = runCLI(t, cliEnv(t, "BATON_ENDPOINT="+s.URL), nil, "send", "jobs")
	if r.code != 1 || strings.Contains(r.stderr, "Ctrl-D") || !strings.Contains(r.stderr, "baton: no body: standard input was empty (give the body as an argument, or on standard input)") {
		t.Errorf("send with standard input from /dev/null: %v", r)
	}

	mustFail(t, s.URL, "InvalidParameterValue", "send", "jobs", "late", "--delay", "901")
	mustFail(t, s.URL, "a Binary value is base64", "send", "jobs", "x", "-a", "Blob=Binary:not base64!")
}
