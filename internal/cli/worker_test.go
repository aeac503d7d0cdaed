package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/cli"
	"github.com/baton-sqs/baton/internal/testutil"
)

// runWorkerCLI runs `baton worker args…` in process until it exits or
// ctx ends.
func runWorkerCLI(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out bytes.Buffer
	errBuf := &lockedBuffer{}
	code = cli.Main{Stdout: &out, Stderr: errBuf}.Run(ctx, append([]string{"worker"}, args...))
	return code, out.String(), errBuf.String()
}

func TestWorkerRefusesBadMappings(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	jobs := srv.MustCreateQueue(t, "jobs", nil)
	fifo := srv.MustCreateQueue(t, "jobs.fifo", map[string]string{"FifoQueue": "true"})
	config := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(config, []byte("mappings:\n  - queue-url: jobs\n    http: http://127.0.0.1:1/\n    batch-sise: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ep := "--endpoint=" + srv.URL
	tests := []struct {
		args []string
		want string
	}{
		{[]string{ep, "--queue-url", jobs}, "no target"},
		{[]string{ep, "--http", "http://127.0.0.1:1/"}, "no queue"},
		{[]string{ep, "--queue-url", jobs, "--http", "http://127.0.0.1:1/", "--command", "true"}, "not both"},
		{[]string{ep, "--queue-url", jobs, "--command", "true", "--per-message"}, "are for --http"},
		{[]string{ep, "--queue-url", jobs, "--http", "http://127.0.0.1:1/", "--batch-size", "20"}, "batching window of at least 1s"},
		{[]string{ep, "--queue-url", jobs, "--http", "http://127.0.0.1:1/", "--max-payload", "6XB"}, "is not a size"},
		{[]string{ep, "--queue-url", "nosuch", "--http", "http://127.0.0.1:1/"}, "NonExistentQueue"},
		{[]string{ep, "--queue-url", fifo, "--http", "http://127.0.0.1:1/", "--batching-window", "2s"}, "refusing to start: batching-window"},
		{[]string{ep, "--config", config, "--queue-url", jobs}, "--queue-url: the mappings come from --config"},
		{[]string{ep, "--config", config}, "field batch-sise not found"},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code, _, stderr := runWorkerCLI(ctx, tt.args...)
		cancel()
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("baton worker %s: exit %d, stderr %q; want 1 and %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
}

func TestWorkerCheck(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	jobs := srv.MustCreateQueue(t, "jobs", map[string]string{"VisibilityTimeout": "10"})
	code, stdout, stderr := runWorkerCLI(context.Background(), "--endpoint", srv.URL, "--queue-url", "jobs",
		"--http", "http://127.0.0.1:1/", "--target-timeout", "1m", "--check")
	if code != 0 || !strings.Contains(stdout, jobs+" -> POST http://127.0.0.1:1/") || !strings.Contains(stdout, "warning: visibility: leases last 10s, less than the target timeout 1m0s") {
		t.Errorf("--check: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// Two mappings from a --config file run in one process; cancelling the
// context (SIGTERM) stops both, exit status 0.
func TestWorkerConfigFileMappings(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	a := srv.MustCreateQueue(t, "a", nil)
	b := srv.MustCreateQueue(t, "b", nil)
	var mu sync.Mutex
	got := map[string][]string{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct{ Records []struct{ Body string } }
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("not an event: %s", body)
		}
		mu.Lock()
		for _, rec := range ev.Records {
			got[r.URL.Path] = append(got[r.URL.Path], rec.Body)
		}
		mu.Unlock()
	}))
	defer target.Close()
	dir := t.TempDir()
	config := filepath.Join(dir, "worker.yaml")
	out := filepath.Join(dir, "events")
	yaml := fmt.Sprintf(`endpoint: %s
log-level: debug
shutdown-timeout: 5s
mappings:
  - queue-url: a
    http: %s/a
    batch-size: 20
    batching-window: 1s
    max-payload: 1MiB
  - queue-url: %s
    command: cat >> %s; echo >> %s
    stall-timeout: 10s
`, srv.URL, target.URL, b, out, out)
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{a, b} {
		for i := 0; i < 3; i++ {
			if _, err := srv.Client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String(fmt.Sprint("m", i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var code int
	var stderr string
	go func() {
		code, _, stderr = runWorkerCLI(ctx, "--config", config)
		close(done)
	}()
	// The server's clock is fake and still: the batching window of queue a
	// (on the worker's real clock) ends in a second of real time.
	testutil.CheckFor(t, 20*time.Second, func() error {
		for _, u := range []string{a, b} {
			out, err := srv.Client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
			if err != nil {
				return err
			}
			if n := out.Attributes["ApproximateNumberOfMessages"] + out.Attributes["ApproximateNumberOfMessagesNotVisible"]; n != "00" {
				return fmt.Errorf("queue %s: visible+in flight %s", u, n)
			}
		}
		return nil
	})
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("baton worker did not exit 20 s after its context ended")
	}
	if code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, stderr)
	}
	mu.Lock()
	sort.Strings(got["/a"])
	if fmt.Sprint(got["/a"]) != "[m0 m1 m2]" {
		t.Errorf("queue a's HTTP target got %v, want [m0 m1 m2]", got["/a"])
	}
	mu.Unlock()
	data, err := os.ReadFile(out)
	if err != nil || strings.Count(string(data), `"eventSource":"aws:sqs"`) != 3 {
		t.Errorf("queue b's command got %q (%v), want 3 records", data, err)
	}
	if strings.Count(stderr, "worker started") != 2 || strings.Count(stderr, "worker stopped") != 2 {
		t.Errorf("log does not show two workers starting and stopping:\n%s", stderr)
	}
}
