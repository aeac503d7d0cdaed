package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

// mustSend sends body to url through the SDK and returns the message id.
func mustSend(t *testing.T, s *testutil.Server, url, body string, attrs map[string]types.MessageAttributeValue) string {
	t.Helper()
	out, err := s.Client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs,
	})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	return aws.ToString(out.MessageId)
}

func TestCLIReceive(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "jobs", map[string]string{"VisibilityTimeout": "60"})
	id := mustSend(t, s, url, "hello\nworld", map[string]types.MessageAttributeValue{
		"Kind": {DataType: aws.String("String"), StringValue: aws.String("order")},
	})

	// Readable output: headers, a blank line, the body.
	out := mustSucceed(t, s.URL, "receive", "jobs", "--visibility", "10")
	for _, want := range []string{"MessageId: " + id + "\n", "ApproximateReceiveCount: 1\n",
		"SentTimestamp: " + testutil.Epoch.Format("2006-01-02T15:04:05.000Z") + "\n",
		"Attribute Kind (String): order\n", "ReceiptHandle: ", "\n\nhello\nworld\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("receive: missing %q in\n%s", want, out)
		}
	}

	// --visibility 10 leased it for 10 s, not the queue's 60: no message,
	// which is not an error.
	r := runCLI(t, cliEnv(t, "BATON_ENDPOINT="+s.URL), nil, "receive", "jobs")
	if r.code != 0 || r.stdout != "" || r.stderr != "no messages\n" {
		t.Errorf("receive from an empty queue: %v\nwant exit 0, no output and \"no messages\" on stderr", r)
	}
	s.Clock.Advance(10 * time.Second)

	// --json, then --delete: the message is gone.
	out = mustSucceed(t, s.URL, "receive", url, "--count", "10", "--json", "--delete")
	var doc struct {
		Messages []struct {
			MessageId, ReceiptHandle, MD5OfBody, Body string
			Attributes                                map[string]string
			MessageAttributes                         map[string]struct{ DataType, StringValue string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("receive --json: %v\n%s", err, out)
	}
	if len(doc.Messages) != 1 {
		t.Fatalf("receive --json: got %d messages, want 1\n%s", len(doc.Messages), out)
	}
	m := doc.Messages[0]
	if m.MessageId != id || m.Body != "hello\nworld" || m.ReceiptHandle == "" || m.MD5OfBody == "" ||
		m.Attributes["ApproximateReceiveCount"] != "2" || m.MessageAttributes["Kind"].StringValue != "order" {
		t.Errorf("receive --json: got %+v", m)
	}
	a := queueAttrs(t, s, url)
	if a["ApproximateNumberOfMessages"] != "0" || a["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Errorf("after receive --delete: %v, want no messages left", a)
	}
	if out := mustSucceed(t, s.URL, "receive", url, "--json"); out != "{\n  \"Messages\": []\n}\n" {
		t.Errorf("receive --json from an empty queue: got %q", out)
	}

	mustFail(t, s.URL, "InvalidParameterValue: Value 11 for parameter MaxNumberOfMessages is invalid", "receive", "jobs", "--count", "11")
}

// `baton receive --wait` long-polls: it returns the message sent while it
// waits.
func TestCLIReceiveWait(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "jobs", nil)

	bin := batonBinary(t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "receive", "jobs", "--wait", "20", "--delete")
	cmd.Env = cliEnv(t, "BATON_ENDPOINT="+s.URL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.WaitForTimers(t, 1) // the long poll is waiting
	id := mustSend(t, s, url, "late", nil)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("receive --wait: %v\n%s", err, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "MessageId: "+id+"\n") || !strings.HasSuffix(out, "\n\nlate\n") {
		t.Errorf("receive --wait: got\n%s\nwant message %s", out, id)
	}
}

// An explicit 0 is sent, not left out: aws-sdk-go-v2 drops an int32 member
// that is 0, and SQS then applies the queue's attribute instead, so
// `--wait 0` long-polled for the queue's ReceiveMessageWaitTimeSeconds,
// `--visibility 0` leased for its VisibilityTimeout, `send --delay 0`
// delayed by its DelaySeconds and `--count 0` received one message.
func TestCLIExplicitZero(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "jobs", map[string]string{
		"ReceiveMessageWaitTimeSeconds": "20", "VisibilityTimeout": "60", "DelaySeconds": "30"})
	s.MustCreateQueue(t, "empty", map[string]string{"ReceiveMessageWaitTimeSeconds": "20"})

	// run gives the binary 30 s, built beforehand: the server's clock is
	// fake, so a long poll that was not asked for never ends.
	bin := batonBinary(t)
	run := func(args ...string) cliResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = cliEnv(t, "BATON_ENDPOINT="+s.URL)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("baton %s: still running after 30 s", strings.Join(args, " "))
		}
		r := cliResult{stdout: stdout.String(), stderr: stderr.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
		return r
	}

	if r := run("send", "jobs", "now", "--delay", "0"); r.code != 0 {
		t.Fatalf("send --delay 0: %v", r)
	}
	if a := queueAttrs(t, s, url); a["ApproximateNumberOfMessages"] != "1" || a["ApproximateNumberOfMessagesDelayed"] != "0" {
		t.Errorf("after send --delay 0: %v, want the message visible at once", a)
	}
	if r := run("receive", "jobs", "--wait", "0", "--visibility", "0"); r.code != 0 || !strings.HasSuffix(r.stdout, "\n\nnow\n") {
		t.Fatalf("receive --wait 0 --visibility 0: %v, want the message", r)
	}
	if a := queueAttrs(t, s, url); a["ApproximateNumberOfMessages"] != "1" || a["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Errorf("after receive --visibility 0: %v, want the message visible again at once", a)
	}
	if r := run("receive", "empty", "--wait", "0"); r.code != 0 || r.stderr != "no messages\n" {
		t.Errorf("receive --wait 0 from an empty queue: %v, want \"no messages\" at once", r)
	}
	if r := run("receive", "jobs", "--count", "0"); r.code != 1 || !strings.Contains(r.stderr, "Value 0 for parameter MaxNumberOfMessages is invalid") {
		t.Errorf("receive --count 0: %v, want refused as --count 11 is", r)
	}
}
