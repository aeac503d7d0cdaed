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

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/cli"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
)

// runWorkerCLI runs `baton worker args…` in process until it exits or
// ctx ends.
func runWorkerCLI(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out bytes.Buffer
	errBuf := &logbuf.Buffer{}
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
	topTypo := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(topTypo, []byte("endpont: x\nmappings:\n  - queue-url: jobs\n    http: http://127.0.0.1:1/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ep := "--endpoint=" + srv.URL
	tests := []workerRefusal{
		{[]string{ep, "--queue-url", jobs}, "no target"},
		{[]string{ep, "--http", "http://127.0.0.1:1/"}, "no queue"},
		{[]string{ep, "--queue-url", jobs, "--http", "http://127.0.0.1:1/", "--command", "true"}, "not both"},
		{[]string{ep, "--queue-url", jobs, "--command", "true", "--per-message"}, "are for --http"},
		{[]string{ep, "--queue-url", jobs, "--http", "http://127.0.0.1:1/", "--batch-size", "20"}, "batching window of at least 1s"},
		{[]string{ep, "--queue-url", jobs, "--http", "http://127.0.0.1:1/", "--max-payload", "6XB"}, "is not a size"},
		{[]string{ep, "--queue-url", "nosuch", "--http", "http://127.0.0.1:1/"}, "NonExistentQueue"},
		{[]string{ep, "--queue-url", fifo, "--http", "http://127.0.0.1:1/", "--batching-window", "2s"}, "refusing to start: batching-window"},
		{[]string{ep, "--config", config, "--queue-url", jobs}, "--queue-url: the mappings come from --config"},
		{[]string{ep, "--config", config}, `line 4: unknown key "batch-sise" (did you mean batch-size?); a mapping's keys are batch-size, batching-window,`},
		{[]string{ep, "--config", topTypo}, `line 1: unknown key "endpont" (did you mean endpoint?); the keys are endpoint, log-level, mappings,`},
	}
	checkRefusals(t, tests)
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

// --check on a queue whose leases last 12 h names the stall a crash would
// cause, and on batches over one without --report-batch-item-failures,
// that one failing message fails its whole batch; with the flag, batches
// draw no warning.
func TestWorkerCheckLongLeasesAndWholeBatches(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	srv.MustCreateQueue(t, "long", map[string]string{"VisibilityTimeout": "43200"})
	code, stdout, stderr := runWorkerCLI(context.Background(), "--endpoint", srv.URL, "--queue-url", "long",
		"--http", "http://127.0.0.1:1/", "--check")
	for _, want := range []string{
		"warning: visibility: leases last 12h0m0s: if the worker crashes or is killed without its shutdown, the messages it holds stay hidden that long",
		"warning: partial-batch: batches of up to 10 messages without ReportBatchItemFailures (--report-batch-item-failures): one failing message fails its whole batch",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("--check: exit %d, want 0 and %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
		}
	}
	code, stdout, stderr = runWorkerCLI(context.Background(), "--endpoint", srv.URL, "--queue-url", "long",
		"--http", "http://127.0.0.1:1/", "--report-batch-item-failures", "--check")
	if code != 0 || strings.Contains(stdout, "partial-batch") {
		t.Errorf("--check --report-batch-item-failures: exit %d, want 0 and no partial-batch warning\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
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

// A setting given with a value outside its documented range, 0 included, is
// refused with the flag's (variable's, key's) name and the range, not
// replaced by the library's default; left out, it takes its default.
func TestWorkerRefusesOutOfRange(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	srv.MustCreateQueue(t, "jobs", nil)
	dir := t.TempDir()
	file := func(name, yaml string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	mapping := "mappings:\n  - queue-url: jobs\n    command: cat\n"
	ep := "--endpoint=" + srv.URL
	http := []string{ep, "--queue-url", "jobs", "--http", "http://127.0.0.1:1/", "--check"}
	command := []string{ep, "--queue-url", "jobs", "--command", "cat", "--check"}
	tests := []workerRefusal{
		{append(http, "--max-concurrency", "0"), "worker: --max-concurrency 0: must be 1 to 1000"},
		{append(http, "--max-concurrency", "1001"), "worker: --max-concurrency 1001: must be 1 to 1000"},
		{append(http, "--batch-size", "0"), "worker: --batch-size 0: must be 1 to 10000"},
		{append(http, "--batch-size", "10001", "--batching-window", "1s"), "worker: --batch-size 10001: must be 1 to 10000"},
		{append(http, "--batching-window", "301s"), "worker: --batching-window 5m1s: must be 0s to 300s"},
		{append(http, "--target-timeout", "0"), "worker: --target-timeout 0s: must be more than 0s and less than 12h"},
		{append(http, "--target-timeout", "12h"), "worker: --target-timeout 12h0m0s: must be more than 0s and less than 12h"},
		{append(http, "--visibility-timeout", "0"), "worker: --visibility-timeout 0s: must be 1s to 12h (leave it out"},
		{append(command, "--kill-grace", "0"), "worker: --kill-grace 0s: must be more than 0s"},
		{append(command, "--stall-timeout", "-1s"), "worker: --stall-timeout -1s: must be 0s (no check) or more"},
		{append(command, "--shutdown-timeout", "0"), "--shutdown-timeout 0s: must be more than 0s"},
		// --per-message makes the batch size 1, unless one is given.
		{append(http, "--per-message", "--batch-size", "10"), "batch size 10: a per-message target gets one message per request"},
		{[]string{ep, "--check", "--config", file("mc.yaml", mapping+"    max-concurrency: 0\n")},
			"mc.yaml: mappings[0]: max-concurrency: 0: must be 1 to 1000"},
		{[]string{ep, "--check", "--config", file("bs.yaml", mapping+"    batch-size: 0\n")},
			"bs.yaml: mappings[0]: batch-size: 0: must be 1 to 10000"},
		{[]string{ep, "--check", "--config", file("tt.yaml", mapping+"    target-timeout: 0s\n")},
			"tt.yaml: mappings[0]: target-timeout: 0s: must be more than 0s"},
		{[]string{ep, "--check", "--config", file("kg.yaml", mapping+"    kill-grace: 0s\n")},
			"kg.yaml: mappings[0]: kill-grace: 0s: must be more than 0s"},
		{[]string{ep, "--check", "--config", file("vt.yaml", mapping+"    visibility-timeout: 0s\n")},
			"vt.yaml: mappings[0]: visibility-timeout: 0s: must be 1s to 12h"},
		{[]string{ep, "--check", "--config", file("st.yaml", "shutdown-timeout: 0s\n"+mapping)},
			"st.yaml: shutdown-timeout: 0s: must be more than 0s"},
	}
	checkRefusals(t, tests)

	// Left out, on the command line or in the file, they take their defaults.
	for _, args := range [][]string{
		http,
		command,
		append(http, "--per-message"),
		append(http, "--batch-size", "1", "--max-concurrency", "1000", "--visibility-timeout", "1m", "--shutdown-timeout", "1s"),
		{ep, "--check", "--config", file("ok.yaml", mapping+"  - queue-url: jobs\n    http: http://127.0.0.1:1/\n    per-message: true\n")},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code, stdout, stderr := runWorkerCLI(ctx, args...)
		cancel()
		if code != 0 || !strings.Contains(stdout, " -> ") {
			t.Errorf("baton worker %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
}

// `baton worker` reads BATON_WORKER_<FLAG> (and BATON_ENDPOINT), never
// serve's BATON_<FLAG>: BATON_CONFIG names serve's config file, of another
// format, in an environment set up for the server.
func TestWorkerEnvironment(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	jobs := srv.MustCreateQueue(t, "jobs", nil)
	other := srv.MustCreateQueue(t, "other", nil)
	dir := t.TempDir()
	serveConfig := filepath.Join(dir, "baton.yaml")
	workerConfig := filepath.Join(dir, "worker.yaml")
	if err := os.WriteFile(serveConfig, []byte("listen: 127.0.0.1:9324\nstore: memory\nlog-level: info\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(workerConfig, []byte("mappings:\n  - queue-url: other\n    command: cat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	serveEnv := []string{"BATON_CONFIG=" + serveConfig, "BATON_LOG_LEVEL=bogus", "BATON_STORE=postgres://baton@127.0.0.1:1/prod",
		"BATON_BATCH_SIZE=0", "BATON_MAX_CONCURRENCY=0", "BATON_QUEUE_URL=nosuch", "BATON_SHUTDOWN_TIMEOUT=0s"}

	// serve's variables do not reach the worker.
	r := runCLI(t, cliEnv(t, append(serveEnv, "BATON_ENDPOINT="+srv.URL)...), nil,
		"worker", "--queue-url", "jobs", "--command", "cat", "--check")
	if r.code != 0 || !strings.Contains(r.stdout, jobs+" -> ") {
		t.Errorf("worker with serve's BATON_* set: %v", r)
	}

	// Its own: BATON_WORKER_CONFIG is the worker's --config.
	r = runCLI(t, cliEnv(t, append(serveEnv, "BATON_ENDPOINT="+srv.URL, "BATON_WORKER_CONFIG="+workerConfig)...), nil,
		"worker", "--check")
	if r.code != 0 || !strings.Contains(r.stdout, other+" -> ") || strings.Contains(r.stdout, jobs+" -> ") {
		t.Errorf("worker with BATON_WORKER_CONFIG: %v", r)
	}
	// BATON_WORKER_ENDPOINT wins over BATON_ENDPOINT; every flag has its
	// variable.
	r = runCLI(t, cliEnv(t, "BATON_ENDPOINT=http://127.0.0.1:1", "BATON_WORKER_ENDPOINT="+srv.URL,
		"BATON_WORKER_QUEUE_URL=jobs", "BATON_WORKER_COMMAND=cat", "BATON_WORKER_CHECK=true"), nil, "worker")
	if r.code != 0 || !strings.Contains(r.stdout, jobs+" -> command: cat") {
		t.Errorf("worker configured by BATON_WORKER_*: %v", r)
	}
	// Errors name the variable.
	for _, tt := range []struct{ env, want string }{
		{"BATON_WORKER_MAX_CONCURRENCY=0", "worker: BATON_WORKER_MAX_CONCURRENCY=0: must be 1 to 1000"},
		{"BATON_WORKER_SHUTDOWN_TIMEOUT=0s", "BATON_WORKER_SHUTDOWN_TIMEOUT=0s: must be more than 0s"},
		{"BATON_WORKER_LOG_LEVEL=bogus", `--log-level "bogus"`},
	} {
		r = runCLI(t, cliEnv(t, "BATON_ENDPOINT="+srv.URL, tt.env), nil, "worker", "--queue-url", "jobs", "--command", "cat", "--check")
		if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("worker with %s: %v\nwant exit 1 and %q", tt.env, r, tt.want)
		}
	}
	r = runCLI(t, cliEnv(t, "BATON_ENDPOINT="+srv.URL, "BATON_WORKER_CONFIG="+workerConfig, "BATON_WORKER_QUEUE_URL=jobs"), nil, "worker", "--check")
	if want := "BATON_WORKER_QUEUE_URL: the mappings come from --config " + workerConfig; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("BATON_WORKER_QUEUE_URL next to a --config file: %v\nwant exit 1 and %q", r, want)
	}
}

// workerRefusal is a `baton worker` command line that must fail, and what
// its error must say.
type workerRefusal struct {
	args []string
	want string
}

// checkRefusals runs each command line and checks it exits 1 saying want.
func checkRefusals(t *testing.T, tests []workerRefusal) {
	t.Helper()
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code, _, stderr := runWorkerCLI(ctx, tt.args...)
		cancel()
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("baton worker %s: exit %d, stderr %q; want 1 and %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
}

// When the queue is deleted under the worker, its receives fail: the
// worker says so once, with the server's error, and no line per failed
// receive says it again on every backoff.
func TestWorkerSaysFailingReceivesOnce(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t, testutil.Options{Clock: clock.System{}})
	url := srv.MustCreateQueue(t, "doomed", nil)
	if _, err := srv.Client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")}); err != nil {
		t.Fatal(err)
	}
	delivered := make(chan struct{}, 1)
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		select {
		case delivered <- struct{}{}:
		default:
		}
	}))
	defer target.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &logbuf.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main{Stdout: io.Discard, Stderr: stderr}.Run(ctx, []string{"worker", "--endpoint", srv.URL, "--queue-url", url,
			"--http", target.URL, "--max-concurrency", "2", "--shutdown-timeout", "5s"})
	}()
	// A delivery shows the receives running (a queue deleted before the
	// runtime has read it stops the start instead).
	select {
	case <-delivered:
	case <-time.After(30 * time.Second):
		t.Fatalf("nothing delivered in 30 s:\n%s", stderr.String())
	}
	testutil.CheckFor(t, 30*time.Second, func() error { // its delete done
		out, err := srv.Client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			return err
		}
		if n := out.Attributes["ApproximateNumberOfMessages"] + out.Attributes["ApproximateNumberOfMessagesNotVisible"]; n != "00" {
			return fmt.Errorf("visible+in flight %s", n)
		}
		return nil
	})
	if _, err := srv.Client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	const failing = `msg="consumer: receives failing: a receive got no answer or an error`
	testutil.CheckFor(t, time.Minute, func() error {
		if log := stderr.String(); !strings.Contains(log, failing) {
			return fmt.Errorf("no failing line yet:\n%s", log)
		}
		return nil
	})
	// Receives go on failing, with a backoff from 200 ms: a few more fail
	// meanwhile (how many does not matter).
	time.Sleep(2 * time.Second)
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d, want 0 (nothing was held)", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("baton worker did not exit 30 s after its context ended")
	}
	log := stderr.String()
	if n := strings.Count(log, failing); n != 1 || !strings.Contains(log, "NonExistentQueue") {
		t.Errorf("%d failing lines, want 1 naming the missing queue:\n%s", n, log)
	}
	for line := range strings.Lines(log) {
		if strings.Contains(line, "op=ReceiveMessage") && !strings.Contains(line, failing) {
			t.Errorf("a failed receive said again, beside the failing line: %s\nin:\n%s", line, log)
		}
	}
}
