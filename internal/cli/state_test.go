package cli_test

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
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/cli"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
)

// TestCLIStateSigned: reset, export and import reach a server that checks
// signatures, each acting for the key's account only; a wrong secret is
// refused and changes nothing.
func TestCLIStateSigned(t *testing.T) {
	t.Parallel()
	url, c := serveSigned(t, "AKIDSTATE", "state-secret", "555555555555")
	jobs := jobsHolding(t, c, "kept")
	good := cliEnv(t, "AWS_ACCESS_KEY_ID=AKIDSTATE", "AWS_SECRET_ACCESS_KEY=state-secret")
	bad := cliEnv(t, "AWS_ACCESS_KEY_ID=AKIDSTATE", "AWS_SECRET_ACCESS_KEY=wrong")
	file := filepath.Join(t.TempDir(), "state.json")
	if r := runCLI(t, good, nil, "export", "--endpoint", url, file); r.code != 0 || !strings.Contains(r.stderr, "exported 1 queues, 1 messages") {
		t.Fatalf("export: %v", r)
	}
	if r := runCLI(t, bad, nil, "reset", "--endpoint", url); r.code != 1 || !strings.Contains(r.stderr, "reset: SignatureDoesNotMatch") {
		t.Errorf("reset with a wrong secret: %v", r)
	}
	if r := runCLI(t, good, nil, "reset", "--endpoint", url); r.code != 0 || !strings.Contains(r.stdout, "deleted 1 queues") {
		t.Fatalf("reset: %v", r)
	}
	if r := runCLI(t, bad, nil, "import", "--endpoint", url, file); r.code != 1 || !strings.Contains(r.stderr, "import: SignatureDoesNotMatch") {
		t.Errorf("import with a wrong secret: %v", r)
	}
	if r := runCLI(t, good, nil, "import", "--endpoint", url, file); r.code != 0 || !strings.Contains(r.stdout, "imported 1 queues, 1 messages") {
		t.Fatalf("import: %v", r)
	}
	got, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &jobs})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != "kept" {
		t.Errorf("receive after the import: %v %v", err, got)
	}
}

// TestServeImportOnce: serve --import loads the file into an empty
// durable store; started again on that store it loads nothing more and
// says so, rather than failing or loading the messages twice.
func TestServeImportOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "fixture.json")
	if err := os.WriteFile(file, []byte(`{"format":1,"queues":[{"name":"jobs","messages":[{"body":"once"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func() (string, *logbuf.Buffer, func()) {
		var logs logbuf.Buffer
		cfg := cli.ServeConfig{Listen: "127.0.0.1:0", Store: "embedded", Durability: "full", DataDir: dir, LogLevel: "info",
			AccountID: "000000000000", Region: "us-east-1", Import: file, Logs: &logs}
		ctx, cancel := context.WithCancel(context.Background())
		ready, done := make(chan string, 1), make(chan error, 1)
		go func() { done <- cli.Serve(ctx, cfg, ready) }()
		select {
		case addr := <-ready:
			return "http://" + addr, &logs, func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Serve: %v", err)
				}
			}
		case err := <-done:
			cancel()
			t.Fatalf("Serve: %v\n%s", err, logs.String())
		case <-time.After(30 * time.Second):
			cancel()
			t.Fatalf("not serving after 30 s:\n%s", logs.String())
		}
		return "", nil, nil
	}
	count := func(url string) string {
		c := client(url, "x", "y", http.DefaultClient)
		a, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url + "/000000000000/jobs"),
			AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
		if err != nil {
			t.Fatal(err)
		}
		return a.Attributes["ApproximateNumberOfMessages"]
	}
	url, logs, stop := start()
	if n := count(url); n != "1" || !strings.Contains(logs.String(), "msg=imported") {
		t.Errorf("first start: %s messages, want 1; log:\n%s", n, logs.String())
	}
	stop()
	url, logs, stop = start()
	defer stop()
	if n := count(url); n != "1" || !strings.Contains(logs.String(), "--import skipped") {
		t.Errorf("second start: %s messages, want 1 and a skip; log:\n%s", n, logs.String())
	}
}
