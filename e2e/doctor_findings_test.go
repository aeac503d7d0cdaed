package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// Issue 21 on the built binary in real time: a mixed incident read back as
// `baton doctor`'s text, and the receives and releases that must raise no
// finding.
func TestDoctorFindings(t *testing.T) {
	t.Parallel()
	p := startBaton(t)
	c := testutil.NewClient(p.URL)
	ctx := context.Background()

	newQueue := func(t *testing.T, name, vis string) string {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": vis}})
		if err != nil {
			t.Fatal(err)
		}
		return *out.QueueUrl
	}
	send := func(t *testing.T, url string, n int) []string {
		var ids []string
		for range n {
			out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("job")})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, *out.MessageId)
		}
		return ids
	}
	// receive takes n messages, by id, with up to 15 s of long polls.
	receive := func(t *testing.T, url string, n int) map[string]types.Message {
		got := map[string]types.Message{}
		for deadline := time.Now().Add(15 * time.Second); len(got) < n && time.Now().Before(deadline); {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: int32(n - len(got)), WaitTimeSeconds: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out.Messages {
				got[*m.MessageId] = m
			}
		}
		if len(got) != n {
			t.Fatalf("received %d messages within 15 s, want %d", len(got), n)
		}
		return got
	}
	del := func(t *testing.T, url string, m types.Message) {
		if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	change := func(t *testing.T, url string, m types.Message, vis int32) {
		if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: vis}); err != nil {
			t.Fatal(err)
		}
	}
	doctor := func(t *testing.T, args ...string) string {
		out, err := exec.Command(batonBin, append([]string{"doctor", "--endpoint", p.URL}, args...)...).Output()
		if err != nil {
			t.Fatalf("baton doctor: %v", err)
		}
		return string(out)
	}

	// Three 5 s handlers on 3 s leases, and three that throw. A and B
	// receive every message; A's slow deletes come late, B's retries of
	// the thrown ones succeed at once.
	t.Run("mixed", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "mixed", "3")
		slow, failing := send(t, url, 3), send(t, url, 3)
		a := receive(t, url, 6)
		start := time.Now()
		time.Sleep(time.Until(start.Add(3500 * time.Millisecond)))
		b := receive(t, url, 6) // the leases lapsed at 3 s
		for _, id := range failing {
			del(t, url, b[id])
		}
		time.Sleep(time.Until(start.Add(5 * time.Second)))
		for _, id := range slow {
			del(t, url, a[id]) // late: the message ran twice
		}
		for _, id := range slow {
			del(t, url, b[id])
		}
		out := doctor(t, "mixed")
		for _, want := range []string{
			"mixed: LEASE-TOO-SHORT + HANDLER-FAILING\n",
			"[1/2] lease-too-short, on ",
			"3 late completions, 3 confirmed duplicate executions",
			"[2/2] handler-failing, on 3 leases\n",
			"fix:  Look at the consumers' errors",
			"kept in memory and starts when the server starts",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("baton doctor mixed lacks %q:\n%s", want, out)
			}
		}
	})

	// Receives with VisibilityTimeout 0, releases at once and releases
	// with a delay: no finding, and no renewal.
	t.Run("no false alarm", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "calm", "30")
		send(t, url, 3)
		for range 3 {
			receiveZero(t, p.URL, url)
		}
		for _, m := range receive(t, url, 3) {
			change(t, url, m, 0) // not ready
		}
		for _, m := range receive(t, url, 3) {
			change(t, url, m, 1) // back in a second, not in 30
		}
		time.Sleep(1500 * time.Millisecond)
		for _, m := range receive(t, url, 3) {
			del(t, url, m)
		}
		var rep server.LeaseReportJSON
		if err := json.Unmarshal([]byte(doctor(t, "--json", "calm")), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Diagnosis != "healthy" || len(rep.Findings) != 0 || rep.ExpiredLeases != 0 || rep.LateCompletions != 0 ||
			rep.Releases != 6 || rep.Renewals != 0 || rep.RedeliveriesNeverReturned != 0 {
			t.Errorf("report %+v", rep)
		}
	})
}

// receiveZero receives up to ten messages with VisibilityTimeout 0, which
// the Go SDK leaves out of a request as a zero value: as another SDK sends
// it, in the JSON protocol (the server runs without authentication).
func receiveZero(t *testing.T, endpoint, queueURL string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"QueueUrl": queueURL, "MaxNumberOfMessages": 10, "VisibilityTimeout": 0})
	req, err := http.NewRequest(http.MethodPost, endpoint+"/", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.ReceiveMessage")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Messages []json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || len(out.Messages) != 3 {
		t.Fatalf("receive with VisibilityTimeout 0: %s, %d messages, %v", resp.Status, len(out.Messages), err)
	}
}
