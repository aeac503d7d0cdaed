package e2e_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// TestDataDirRemovedWhileServing removes the data directory of the built
// server while it serves (an operator's `rm -rf`, a cleanup job), and
// checks through aws-sdk-go-v2 that the server does not go on
// acknowledging sends it writes to a file no restart will find: each call
// that would change something is answered 503 ServiceUnavailable, /healthz
// answers 503 naming the removed write-ahead log, the log says it, calls
// that only read are answered, the server stays up past its idle flush
// (which used to open a new write-ahead log in the removed directory and
// stop the process), and `baton export` still saves what it holds.
func TestDataDirRemovedWhileServing(t *testing.T) {
	skipnote.SkipUnlessLong(t, "the data directory removed under the server")
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	p := startBatonArgs(t, "--data-dir", data, "--account-id", account)
	c := diskClient(p.URL)
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")}); err != nil {
		t.Fatal(err)
	}
	url := p.queueURL("q")
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("before")}); err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("after")})
	wantUnavailable(t, "send once the data directory is removed", err)
	_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("other")})
	wantUnavailable(t, "CreateQueue once the data directory is removed", err)
	if _, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url}); err != nil {
		t.Errorf("GetQueueAttributes once the data directory is removed: %v", err)
	}
	h := healthz(p.URL)
	t.Logf("/healthz: %d %s", h.status, h.body)
	if h.status != http.StatusServiceUnavailable || !strings.Contains(h.body, "was removed") {
		t.Errorf("/healthz once the data directory is removed: %d %q, want 503 naming the removed write-ahead log", h.status, h.body)
	}
	if !strings.Contains(p.logs.String(), "the write-ahead log was removed under the running server") {
		t.Errorf("no log line of the removed write-ahead log:\n%s", tail(p.logs.String(), 10))
	}

	// Past two ticks of the idle flush (every 5 s).
	if rest := 12*time.Second - time.Since(removed); rest > 0 {
		time.Sleep(rest)
	}
	select {
	case <-p.exited:
		t.Fatalf("the server stopped (%v):\n%s", p.waitErr, tail(p.logs.String(), 10))
	default:
	}
	// (The send answered 503 may be there too, as after any 503.)
	out, code := runBaton(t, "export", "--endpoint", p.URL)
	if code != 0 || !strings.Contains(out, `"before"`) {
		t.Errorf("baton export once the data directory is removed: exit %d, want the message sent before:\n%s", code, out)
	}
}
