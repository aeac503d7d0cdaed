package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

func TestCLIPeek(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "jobs", map[string]string{"VisibilityTimeout": "60"})
	first := mustSend(t, s, url, "first\nbody", map[string]types.MessageAttributeValue{
		"Kind": {DataType: aws.String("String"), StringValue: aws.String("order")},
	})
	s.Clock.Advance(time.Second)
	second := mustSend(t, s, url, "second", nil)
	s.Clock.Advance(time.Second)
	out, err := s.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	if err != nil || len(out.Messages) != 1 || *out.Messages[0].MessageId != first {
		t.Fatalf("receive: %v %+v", err, out)
	}
	s.Clock.Advance(10 * time.Second)

	text := mustSucceed(t, s.URL, "peek", "jobs")
	for _, want := range []string{
		"MessageId: " + second + "\nState: visible\nReceiveCount: 0\nSent: 2026-01-02T03:04:06.000Z\n\nsecond\n",
		"MessageId: " + first + "\nState: inflight until 2026-01-02T03:05:07.000Z (50s left)\nReceiveCount: 1\n",
		"Attribute Kind (String): order\n\nfirst\nbody\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("peek: missing %q in\n%s", want, text)
		}
	}
	if strings.Index(text, second) > strings.Index(text, first) {
		t.Errorf("peek lists the newest first:\n%s", text)
	}
	if got := mustSucceed(t, s.URL, "peek", url, "--state", "inflight"); !strings.Contains(got, first) || strings.Contains(got, second) {
		t.Errorf("peek --state inflight:\n%s", got)
	}
	if got := mustSucceed(t, s.URL, "peek", "jobs", "--contains", "sec", "--oldest"); !strings.Contains(got, second) || strings.Contains(got, first) {
		t.Errorf("peek --contains sec:\n%s", got)
	}
	if got := mustSucceed(t, s.URL, "peek", "jobs", "-n", "1"); !strings.Contains(got, second) || strings.Contains(got, first) ||
		!strings.Contains(got, "raise -n") {
		t.Errorf("peek -n 1:\n%s", got)
	}
	var doc server.BrowseJSON
	if err := json.Unmarshal([]byte(mustSucceed(t, s.URL, "peek", "jobs", "--json")), &doc); err != nil || len(doc.Messages) != 2 ||
		doc.Messages[1].State != "inflight" || doc.Messages[1].MessageAttributes["Kind"].StringValue != "order" {
		t.Errorf("peek --json: %v %+v", err, doc)
	}
	r := runCLI(t, cliEnv(t, "BATON_ENDPOINT="+s.URL), nil, "peek", "jobs", "--state", "inflight", "--contains", "nothing like it")
	if r.code != 0 || r.stdout != "" || r.stderr != "no messages\n" {
		t.Errorf("peek finding nothing: %v", r)
	}

	// None of it leased the second message.
	got := receiveCounted(t, s, url)
	if *got.MessageId != second || got.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("receive after peeking: %s received %s times, want %s for the first time",
			*got.MessageId, got.Attributes["ApproximateReceiveCount"], second)
	}

	mustFail(t, s.URL, "want visible, inflight or delayed", "peek", "jobs", "--state", "asleep")
	mustFail(t, s.URL, "-n must be at least 1", "peek", "jobs", "-n", "0")
	mustFail(t, s.URL, "queue nope: The specified queue does not exist.", "peek", "nope")
}

func receiveCounted(t *testing.T, s *testutil.Server, url string) types.Message {
	t.Helper()
	out, err := s.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	return out.Messages[0]
}

// peek -n beyond one admin API page reads the pages that follow.
func TestCLIPeekPages(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	url := s.MustCreateQueue(t, "bulk", nil)
	const n = 1205
	for i := 0; i < n; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, n); j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(fmt.Sprint("m", j))})
		}
		if _, err := s.Client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ n, want int }{{1100, 1100}, {5000, n}} {
		var doc server.BrowseJSON
		if err := json.Unmarshal([]byte(mustSucceed(t, s.URL, "peek", "bulk", "-n", fmt.Sprint(tc.n), "--json")), &doc); err != nil {
			t.Fatal(err)
		}
		seen := make(map[string]bool)
		for _, m := range doc.Messages {
			seen[m.MessageID] = true
		}
		if len(doc.Messages) != tc.want || len(seen) != tc.want || (doc.NextCursor != "") != (tc.want < n) {
			t.Errorf("peek -n %d: %d messages, %d distinct, next %q; want %d", tc.n, len(doc.Messages), len(seen), doc.NextCursor, tc.want)
		}
	}
}

// peek signs its admin API request as the SQS requests are signed.
func TestCLIPeekSigned(t *testing.T) {
	t.Parallel()
	url, c := serveSigned(t, "AKIDPEEK", "peek-secret", "444444444444")
	jobsHolding(t, c, "signed")
	r := runCLI(t, cliEnv(t, "AWS_ACCESS_KEY_ID=AKIDPEEK", "AWS_SECRET_ACCESS_KEY=peek-secret"), nil, "peek", "--endpoint", url, "jobs")
	if r.code != 0 || !strings.Contains(r.stdout, "\nsigned\n") {
		t.Errorf("peek with the key: %v", r)
	}
	r = runCLI(t, cliEnv(t, "AWS_ACCESS_KEY_ID=AKIDPEEK", "AWS_SECRET_ACCESS_KEY=wrong"), nil, "peek", "--endpoint", url, "jobs")
	if r.code != 1 || !strings.Contains(r.stderr, "queue jobs: SignatureDoesNotMatch: The request signature") || strings.Contains(r.stdout, "signed") {
		t.Errorf("peek with a wrong secret: %v", r)

	}
}
