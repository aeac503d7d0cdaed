package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
)

// TestLongPollLimit fills one client address's long-poll slots and checks
// that one more long poll is refused at once with RequestThrottled, while
// short polls still work and a freed slot can be taken again.
func TestLongPollLimit(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t, testutil.Options{MaxLongPollsPerClient: 2})
	ctx := context.Background()
	u := srv.MustCreateQueue(t, "polls", nil)
	waitFor := func(secs int32) *sqs.ReceiveMessageInput {
		return &sqs.ReceiveMessageInput{QueueUrl: &u, WaitTimeSeconds: secs}
	}
	done := make(chan error, 3)
	for range 2 {
		go func() {
			_, err := srv.Client.ReceiveMessage(ctx, waitFor(20))
			done <- err
		}()
	}
	srv.WaitForTimers(t, 2)

	_, err := srv.Client.ReceiveMessage(ctx, waitFor(20))
	wantAPIError(t, err, "RequestThrottled", 403)
	if _, err := srv.Client.ReceiveMessage(ctx, waitFor(0)); err != nil {
		t.Errorf("short poll while the slots are full: %v", err)
	}
	// Without WaitTimeSeconds the queue's default (0) applies: a short poll.
	if _, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u}); err != nil {
		t.Errorf("receive without WaitTimeSeconds while the slots are full: %v", err)
	}
	// With a queue default above 0 it is a long poll, and refused.
	if _, err := srv.Client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &u,
		Attributes: map[string]string{"ReceiveMessageWaitTimeSeconds": "5"}}); err != nil {
		t.Fatal(err)
	}
	_, err = srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u})
	wantAPIError(t, err, "RequestThrottled", 403)

	srv.Clock.Advance(20 * time.Second)
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("long poll: %v", err)
		}
	}
	// The slots are free again.
	go func() {
		_, err := srv.Client.ReceiveMessage(ctx, waitFor(20))
		done <- err
	}()
	srv.WaitForTimers(t, 1)
	srv.Clock.Advance(20 * time.Second)
	if err := <-done; err != nil {
		t.Errorf("long poll after the others ended: %v", err)
	}
}

// postForm posts a Query form and returns the status and body.
func postForm(t *testing.T, base string, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(base+"/", "application/x-www-form-urlencoded", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBodyLimit checks the request body cap: the largest valid message,
// tripled by percent-encoding, fits; a body over the cap is answered with an
// SQS error, not a 500 or a dropped connection.
func TestBodyLimit(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	u := srv.MustCreateQueue(t, "big", nil)

	// 524,288 two-byte characters: exactly the 1 MiB maximum, 3 MiB as a form.
	big := strings.Repeat("é", 1<<19)
	form := url.Values{"Action": {"SendMessage"}, "QueueUrl": {u}, "MessageBody": {big}}.Encode()
	if len(form) <= 3<<20 {
		t.Fatalf("form is %d bytes; the test wants it above 3 MiB", len(form))
	}
	if status, body := postForm(t, srv.URL, form); status != 200 {
		t.Fatalf("1 MiB message as a 3 MiB form: %d %.300s, want 200", status, body)
	}
	got, err := srv.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(u)})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != big {
		t.Fatalf("receive: %v, want the 1 MiB message", err)
	}

	// Over the cap AWS answers HTTP 413 Request Entity Too Large (reported
	// by the AWS SDK for Java as "Status Code: 413; Error Code: 413 Request
	// Entity Too Large"); Baton adds the error in the request's protocol.
	huge := "Action=SendMessage&MessageBody=" + strings.Repeat("x", 5<<20)
	status, body := postForm(t, srv.URL, huge)
	if status != 413 || !strings.Contains(body, "<Code>RequestEntityTooLarge</Code>") || !strings.Contains(body, "longer than") {
		t.Errorf("5 MiB Query body: %d %.300s, want 413 RequestEntityTooLarge", status, body)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(`{"MessageBody":"`+strings.Repeat("x", 5<<20)+`"}`))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || resp.Header.Get("x-amzn-query-error") != "RequestEntityTooLarge;Sender" {
		t.Errorf("5 MiB JSON body: %d %.300s (%s), want 413 RequestEntityTooLarge", resp.StatusCode, b, resp.Header.Get("x-amzn-query-error"))
	}
}

// TestLongPollSlotsFreed: a long poll frees its client's slot however it
// ends: its client going away, or an error.
func TestLongPollSlotsFreed(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t, testutil.Options{MaxLongPollsPerClient: 2})
	u := srv.MustCreateQueue(t, "slots", nil)
	wait := func(ctx context.Context, url string) error {
		_, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 20})
		return err
	}
	// Clients that go away.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- wait(ctx, u) }()
	}
	srv.WaitForTimers(t, 2)
	cancel()
	for range 2 {
		<-done
	}
	testutil.CheckFor(t, 5*time.Second, func() error {
		if n := srv.Clock.Timers(); n != 0 {
			return fmt.Errorf("%d long polls still waiting after their clients went away", n)
		}
		return nil
	})
	// Errors.
	for range 3 {
		if err := wait(context.Background(), strings.Replace(u, "slots", "missing", 1)); err == nil {
			t.Fatal("long poll of a missing queue: no error")
		}
	}
	// Both slots are free.
	for range 2 {
		go func() { done <- wait(context.Background(), u) }()
	}
	srv.WaitForTimers(t, 2)
	srv.Clock.Advance(20 * time.Second)
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("long poll after the others ended: %v", err)
		}
	}
}
