package e2e_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// account is the account id every test server runs with (--account-id), so
// that queue URLs and ARNs show the flag reached them.
const account = "123456789012"

// The binary and the module it was built from, set by TestMain.
var (
	batonBin   string
	moduleRoot string
)

// TestMain builds the binary the tests run.
func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

// buildAndRun builds cmd/baton once into a temporary directory, runs the
// tests and removes the directory.
func buildAndRun(m *testing.M) int {
	root, err := findModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "baton-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "baton")
	// The build runs before the tests' timer starts: bound it by the
	// same -test.timeout (no bound of its own, which a fresh clone's empty
	// build cache on a busy machine can outlast).
	ctx := context.Background()
	flag.Parse()
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, ok := f.Value.(flag.Getter).Get().(time.Duration); ok && d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/baton")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/baton in %s: %v\n%s", root, err, out)
		return 1
	}
	batonBin, moduleRoot = bin, root
	return pgtest.Main(m)
}

// findModuleRoot walks up from this file's directory to the one holding
// go.mod. Under -trimpath the file name is not absolute; go test then runs in
// the package directory, which is the same place.
func findModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir = filepath.Dir(file)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// needClient runs probe (a command that succeeds only when the client is
// usable). When it fails the test is skipped, or failed when
// BATON_REQUIRE_CLIENTS=1, so that CI cannot pass by skipping. The AWS
// CLI alone took over 30 s to print its version on a loaded machine.
func needClient(t *testing.T, client string, probe ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, probe[0], probe[1:]...).CombinedOutput()
	if err == nil {
		return
	}
	clientUnusable(t, fmt.Sprintf("%s is not usable (%s: %v)", client, strings.Join(probe, " "), err), out)
}

// clientUnusable skips the test because a client cannot run it, as msg
// says, or fails it when BATON_REQUIRE_CLIENTS=1.
func clientUnusable(t *testing.T, msg string, out []byte) {
	t.Helper()
	if os.Getenv("BATON_REQUIRE_CLIENTS") == "1" {
		t.Fatalf("%s and BATON_REQUIRE_CLIENTS=1 requires it\n%s", msg, out)
	}
	skipnote.Skip(t, "an AWS client", "%s; set BATON_REQUIRE_CLIENTS=1 to fail instead\n%s", msg, out)
}

// clientEnv is the environment of the external clients: this process's
// without AWS_* settings, plus dummy credentials, a region and config files
// that do not exist, so a developer's AWS setup cannot leak in.
func clientEnv(t *testing.T) []string {
	dir := t.TempDir()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AWS_") })
	return append(env,
		"AWS_ACCESS_KEY_ID=AKIDBATONE2E",
		"AWS_SECRET_ACCESS_KEY=baton-e2e-secret",
		"AWS_DEFAULT_REGION=us-east-1",
		"AWS_CONFIG_FILE="+filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_RETRY_MODE=standard",
		"AWS_MAX_ATTEMPTS=1",
	)
}

// batonProcess is a running `baton serve`.
type batonProcess struct {
	cmd *exec.Cmd
	// URL is http://127.0.0.1:<port>.
	URL  string
	logs *serverLog
	// exited is closed once the process has exited; waitErr is then set.
	exited  chan struct{}
	waitErr error
}

// serverLog collects the server's standard error and reports the address
// of its "baton serving" line once.
type serverLog struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
	sent bool
}

var servingLine = regexp.MustCompile(`baton serving"? addr=(127\.0\.0\.1:[0-9]+)`)

func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if !l.sent {
		if m := servingLine.FindSubmatch(l.buf.Bytes()); m != nil {
			l.addr <- string(m[1])
			l.sent = true
		}
	}
	return len(p), nil
}

func (l *serverLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startBaton starts the binary on 127.0.0.1:0, waits until GET /healthz
// answers 200 and kills the process when the test ends, logging its output if
// the test failed.
func startBaton(t *testing.T) *batonProcess {
	t.Helper()
	return startBatonArgs(t, "--account-id", account)
}

// queueURL is the URL the server gives queue name.
func (p *batonProcess) queueURL(name string) string {
	return p.URL + "/" + account + "/" + name
}

// md5Hex is the digest SQS reports for a message body.
func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// attr is a message attribute as this test's MD5 oracle sees it: binary
// values are raw bytes.
type attr struct {
	DataType string
	Value    []byte
}

// attributesMD5 computes MD5OfMessageAttributes as docs/sqs-behaviour.md §4.3
// describes it, independently of the server's code.
func attributesMD5(attrs map[string]attr) string {
	h := md5.New()
	field := func(b []byte) {
		binary.Write(h, binary.BigEndian, uint32(len(b)))
		h.Write(b)
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[name]
		field([]byte(name))
		field([]byte(a.DataType))
		if strings.HasPrefix(a.DataType, "Binary") {
			h.Write([]byte{2})
		} else {
			h.Write([]byte{1})
		}
		field(a.Value)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestAttributesMD5 pins the test oracle to the digests in docs/sqs-behaviour.md
// §4.3, most of them recorded from real AWS.
func TestAttributesMD5(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		attrs map[string]attr
		want  string
	}{
		{"Foo", map[string]attr{"Foo": {"String", []byte("Bar")}}, "ae7155c6026991b6d54b11589678bf9c"},
		{"three types", map[string]attr{
			"ClientId": {"String", []byte("c-42")},
			"Retries":  {"Number.int", []byte("3")},
			"Blob":     {"Binary", []byte{0xde, 0xad, 0xbe, 0xef}},
		}, "489ec3752a0fbb1b289096f88629b322"},
		{"three strings", map[string]attr{
			"General": {"String", []byte("Kenobi")},
			"Hello":   {"String", []byte("There")},
			"Help.Me": {"String", []byte("Me")},
		}, "4c360f3fdafd970e05fae2f149d997f5"},
	}
	for _, tt := range tests {
		if got := attributesMD5(tt.attrs); got != tt.want {
			t.Errorf("attributesMD5(%s) = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// awsCLI runs `aws sqs` against one server.
type awsCLI struct {
	t        *testing.T
	endpoint string
	env      []string
}

func newAWSCLI(t *testing.T, endpoint string) *awsCLI {
	return &awsCLI{t: t, endpoint: endpoint, env: clientEnv(t)}
}

// run runs `aws --endpoint-url E sqs args... --output json` and returns its
// standard output, standard error and exit code.
func (c *awsCLI) run(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	full := append([]string{"--endpoint-url", c.endpoint, "sqs"}, args...)
	full = append(full, "--output", "json")
	cmd := exec.CommandContext(ctx, "aws", full...)
	cmd.Env = c.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && ctx.Err() == nil:
		code = exitErr.ExitCode()
	default:
		c.t.Fatalf("aws %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String(), code
}

// must runs the command, fails the test unless it exits 0 and decodes its
// JSON output into out (an empty output decodes as {}).
func (c *awsCLI) must(out any, args ...string) {
	c.t.Helper()
	stdout, stderr, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("aws sqs %s: exit code %d, want 0\n%s", strings.Join(args, " "), code, stderr)
	}
	if out == nil {
		return
	}
	if strings.TrimSpace(stdout) == "" {
		stdout = "{}"
	}
	if err := json.Unmarshal([]byte(stdout), out); err != nil {
		c.t.Fatalf("aws sqs %s: output is not JSON: %v\n%s", args[0], err, stdout)
	}
}

// queueAttributes returns the named attributes of the queue.
func (c *awsCLI) queueAttributes(queueURL string, names ...string) map[string]string {
	c.t.Helper()
	var out struct{ Attributes map[string]string }
	c.must(&out, append([]string{"get-queue-attributes", "--queue-url", queueURL, "--attribute-names"}, names...)...)
	return out.Attributes
}

// wantCounts fails the test unless the queue holds visible and in-flight
// messages as given. Counts may lag (docs/sqs-behaviour.md §3), so they are polled.
func (c *awsCLI) wantCounts(queueURL string, visible, inFlight string) {
	c.t.Helper()
	testutil.CheckFor(c.t, 10*time.Second, func() error {
		got := c.queueAttributes(queueURL, "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
		if got["ApproximateNumberOfMessages"] != visible || got["ApproximateNumberOfMessagesNotVisible"] != inFlight {
			return fmt.Errorf("visible, in flight = %q, %q; want %q, %q", got["ApproximateNumberOfMessages"],
				got["ApproximateNumberOfMessagesNotVisible"], visible, inFlight)
		}
		return nil
	})
}

// receive receives until it holds n messages, failing after 15 s or if more
// arrive. Extra flags go to every receive-message call.
func (c *awsCLI) receive(queueURL string, n int, flags ...string) []cliMessage {
	c.t.Helper()
	var got []cliMessage
	testutil.CheckFor(c.t, 15*time.Second, func() error {
		var out struct{ Messages []cliMessage }
		c.must(&out, append([]string{"receive-message", "--queue-url", queueURL,
			"--max-number-of-messages", "10", "--wait-time-seconds", "1"}, flags...)...)
		got = append(got, out.Messages...)
		if len(got) < n {
			return fmt.Errorf("received %d messages, want %d", len(got), n)
		}
		return nil
	})
	if len(got) != n {
		c.t.Fatalf("received %d messages, want %d: %+v", len(got), n, got)
	}
	return got
}

// cliMessage is a message as `aws sqs receive-message` prints it.
type cliMessage struct {
	MessageId              string
	ReceiptHandle          string
	MD5OfBody              string
	Body                   string
	MD5OfMessageAttributes string
	Attributes             map[string]string
	MessageAttributes      map[string]cliAttr
}

// cliAttr is a message attribute in the CLI's JSON; BinaryValue is base64.
type cliAttr struct {
	DataType    string
	StringValue string `json:",omitempty"`
	BinaryValue string `json:",omitempty"`
}

// batchResult is the output of the three batch commands.
type batchResult struct {
	Successful []struct {
		Id, MessageId, MD5OfMessageBody, MD5OfMessageAttributes string
	}
	Failed []batchFailure
}

type batchFailure struct {
	Id          string
	SenderFault bool
	Code        string
	Message     string
}

// successfulIDs returns the sorted ids of the successful entries.
func (r batchResult) successfulIDs() []string {
	var ids []string
	for _, s := range r.Successful {
		ids = append(ids, s.Id)
	}
	slices.Sort(ids)
	return ids
}

// wantInvalidHandle fails the test unless the only failed entry is id,
// rejected as an invalid receipt handle by the client's fault.
func wantInvalidHandle(t *testing.T, op string, failed []batchFailure, id string) {
	t.Helper()
	if len(failed) != 1 || failed[0].Id != id || failed[0].Code != "ReceiptHandleIsInvalid" || !failed[0].SenderFault {
		t.Errorf("%s Failed = %+v, want one entry {Id:%s SenderFault:true Code:ReceiptHandleIsInvalid}", op, failed, id)
	}
}

// TestAWSCLI drives every queue, message, batch and tag command of the AWS
// CLI v1 (AWS JSON 1.0 protocol). Each subtest owns a queue on one server.
func TestAWSCLI(t *testing.T) {
	t.Parallel()
	needClient(t, "the AWS CLI (aws)", "aws", "--version")
	srv := startBaton(t)
	t.Run("queues", func(t *testing.T) { t.Parallel(); testCLIQueues(t, srv) })
	t.Run("message", func(t *testing.T) { t.Parallel(); testCLIMessage(t, srv) })
	t.Run("attribute types", func(t *testing.T) { t.Parallel(); testCLIAttributeTypes(t, srv) })
	t.Run("batches", func(t *testing.T) { t.Parallel(); testCLIBatches(t, srv) })
	t.Run("purge", func(t *testing.T) { t.Parallel(); testCLIPurge(t, srv) })
	t.Run("fidelity", func(t *testing.T) { t.Parallel(); testCLIFidelity(t, srv) })
}

// createQueue creates queue name with a 60 s visibility timeout, so received
// messages stay in flight while a test looks at them.
func (c *awsCLI) createQueue(srv *batonProcess, name string) string {
	c.t.Helper()
	var out struct{ QueueUrl string }
	c.must(&out, "create-queue", "--queue-name", name, "--attributes", `{"VisibilityTimeout":"60"}`)
	if want := srv.queueURL(name); out.QueueUrl != want {
		c.t.Fatalf("create-queue QueueUrl = %q, want %q", out.QueueUrl, want)
	}
	return out.QueueUrl
}

// wantNonExistent reports an error unless get-queue-url of queue fails with
// the CLI's exit code for service errors and the Query error code.
func (c *awsCLI) wantNonExistent(queue string) error {
	stdout, stderr, code := c.run("get-queue-url", "--queue-name", queue)
	if code != 255 || !strings.Contains(stderr, "(AWS.SimpleQueueService.NonExistentQueue)") {
		return fmt.Errorf("get-queue-url %s: exit code %d, stdout %q, stderr %q; "+
			"want exit code 255 and error code (AWS.SimpleQueueService.NonExistentQueue)", queue, code, stdout, stderr)
	}
	return nil
}

// testCLIQueues: create with attributes and tags, look up, list, attributes,
// tags, delete, and the error for a missing queue.
func testCLIQueues(t *testing.T, srv *batonProcess) {
	cli := newAWSCLI(t, srv.URL)
	const name, other = "e2e-cli-list", "e2e-cli-list-other"
	wantURL := srv.queueURL(name)
	var created struct{ QueueUrl string }
	cli.must(&created, "create-queue", "--queue-name", name,
		"--attributes", `{"VisibilityTimeout":"45","MessageRetentionPeriod":"3600"}`,
		"--tags", `{"team":"baton","env":"ci"}`)
	if created.QueueUrl != wantURL {
		t.Fatalf("create-queue QueueUrl = %q, want %q", created.QueueUrl, wantURL)
	}
	cli.createQueue(srv, other)
	var got struct{ QueueUrl string }
	cli.must(&got, "get-queue-url", "--queue-name", name)
	if got.QueueUrl != wantURL {
		t.Errorf("get-queue-url QueueUrl = %q, want %q", got.QueueUrl, wantURL)
	}
	var listed struct{ QueueUrls []string }
	cli.must(&listed, "list-queues", "--queue-name-prefix", name)
	slices.Sort(listed.QueueUrls) // SQS promises no order
	if want := []string{wantURL, srv.queueURL(other)}; !slices.Equal(listed.QueueUrls, want) {
		t.Errorf("list-queues --queue-name-prefix %s = %q, want %q", name, listed.QueueUrls, want)
	}
	listed.QueueUrls = nil
	cli.must(&listed, "list-queues", "--queue-name-prefix", name+"-o")
	if want := []string{srv.queueURL(other)}; !slices.Equal(listed.QueueUrls, want) {
		t.Errorf("list-queues --queue-name-prefix %s-o = %q, want %q", name, listed.QueueUrls, want)
	}

	// All on a standard queue is exactly this set (docs/sqs-behaviour.md §3).
	all := cli.queueAttributes(wantURL, "All")
	wantKeys := []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed",
		"ApproximateNumberOfMessagesNotVisible", "CreatedTimestamp", "DelaySeconds", "LastModifiedTimestamp",
		"MaximumMessageSize", "MessageRetentionPeriod", "QueueArn", "ReceiveMessageWaitTimeSeconds",
		"SqsManagedSseEnabled", "VisibilityTimeout"}
	if got := slices.Sorted(maps.Keys(all)); !slices.Equal(got, wantKeys) {
		t.Errorf("get-queue-attributes All names = %q, want %q", got, wantKeys)
	}
	for k, want := range map[string]string{
		"VisibilityTimeout": "45", "MessageRetentionPeriod": "3600", "DelaySeconds": "0",
		"MaximumMessageSize": "1048576", "ApproximateNumberOfMessages": "0",
		"QueueArn": "arn:aws:sqs:us-east-1:" + account + ":" + name,
	} {
		if all[k] != want {
			t.Errorf("get-queue-attributes All: %s = %q, want %q", k, all[k], want)
		}
	}
	cli.must(nil, "set-queue-attributes", "--queue-url", wantURL,
		"--attributes", `{"VisibilityTimeout":"60","ReceiveMessageWaitTimeSeconds":"2"}`)
	some := cli.queueAttributes(wantURL, "VisibilityTimeout", "ReceiveMessageWaitTimeSeconds")
	if want := map[string]string{"VisibilityTimeout": "60", "ReceiveMessageWaitTimeSeconds": "2"}; !maps.Equal(some, want) {
		t.Errorf("get-queue-attributes after set-queue-attributes = %v, want %v", some, want)
	}

	// Tags from create-queue, then overwritten, added and removed.
	wantTags := func(want map[string]string) {
		t.Helper()
		var out struct{ Tags map[string]string }
		cli.must(&out, "list-queue-tags", "--queue-url", wantURL)
		if !maps.Equal(out.Tags, want) {
			t.Errorf("list-queue-tags = %v, want %v", out.Tags, want)
		}
	}
	wantTags(map[string]string{"team": "baton", "env": "ci"})
	cli.must(nil, "tag-queue", "--queue-url", wantURL, "--tags", `{"team":"queues","owner":"e2e"}`)
	wantTags(map[string]string{"team": "queues", "env": "ci", "owner": "e2e"})
	cli.must(nil, "untag-queue", "--queue-url", wantURL, "--tag-keys", "env", "never-set")
	wantTags(map[string]string{"team": "queues", "owner": "e2e"})

	// Errors: a queue never created, then one deleted.
	if err := cli.wantNonExistent(name + "-never-created"); err != nil {
		t.Error(err)
	}
	cli.must(nil, "delete-queue", "--queue-url", wantURL)
	cli.must(nil, "delete-queue", "--queue-url", srv.queueURL(other))
	testutil.CheckFor(t, 20*time.Second, func() error { return cli.wantNonExistent(name) })
	listed.QueueUrls = nil
	cli.must(&listed, "list-queues", "--queue-name-prefix", name)
	if len(listed.QueueUrls) != 0 {
		t.Errorf("list-queues after delete-queue = %q, want none", listed.QueueUrls)
	}
}

// testCLIMessage: send with an attribute, receive with every attribute,
// make visible again, receive, extend, delete.
func testCLIMessage(t *testing.T, srv *batonProcess) {
	cli := newAWSCLI(t, srv.URL)
	url := cli.createQueue(srv, "e2e-cli-message")
	const body = "Hello, SQS!"
	var sent struct{ MessageId, MD5OfMessageBody, MD5OfMessageAttributes string }
	cli.must(&sent, "send-message", "--queue-url", url, "--message-body", body,
		"--message-attributes", `{"Foo":{"DataType":"String","StringValue":"Bar"}}`)
	if sent.MessageId == "" || sent.MD5OfMessageBody != "982e00ffc10ba49378a8653ca8fecf47" ||
		sent.MD5OfMessageAttributes != "ae7155c6026991b6d54b11589678bf9c" {
		t.Errorf("send-message = %+v, want a MessageId, MD5OfMessageBody 982e00ffc10ba49378a8653ca8fecf47, "+
			"MD5OfMessageAttributes ae7155c6026991b6d54b11589678bf9c", sent)
	}
	m := cli.receive(url, 1, "--attribute-names", "All", "--message-attribute-names", "All")[0]
	if m.MessageId != sent.MessageId || m.Body != body || m.MD5OfBody != md5Hex(body) ||
		m.MD5OfMessageAttributes != "ae7155c6026991b6d54b11589678bf9c" {
		t.Errorf("receive-message = id %q body %q MD5OfBody %s MD5OfMessageAttributes %s; "+
			"want id %q body %q MD5OfBody %s MD5OfMessageAttributes ae7155c6026991b6d54b11589678bf9c",
			m.MessageId, m.Body, m.MD5OfBody, m.MD5OfMessageAttributes, sent.MessageId, body, md5Hex(body))
	}
	if want := map[string]cliAttr{"Foo": {DataType: "String", StringValue: "Bar"}}; !maps.Equal(m.MessageAttributes, want) {
		t.Errorf("receive-message MessageAttributes = %+v, want %+v", m.MessageAttributes, want)
	}
	if got := slices.Sorted(maps.Keys(m.Attributes)); !slices.Equal(got, []string{"ApproximateFirstReceiveTimestamp",
		"ApproximateReceiveCount", "SenderId", "SentTimestamp"}) || m.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("receive-message --attribute-names All: Attributes = %v, want ApproximateFirstReceiveTimestamp, "+
			"ApproximateReceiveCount 1, SenderId and SentTimestamp", m.Attributes)
	}
	cli.wantCounts(url, "0", "1")
	cli.must(nil, "change-message-visibility", "--queue-url", url,
		"--receipt-handle", m.ReceiptHandle, "--visibility-timeout", "0")
	again := cli.receive(url, 1, "--attribute-names", "ApproximateReceiveCount")[0]
	if again.MessageId != sent.MessageId || again.ReceiptHandle == m.ReceiptHandle ||
		!maps.Equal(again.Attributes, map[string]string{"ApproximateReceiveCount": "2"}) {
		t.Errorf("receive after change-message-visibility 0 = id %q, new handle %t, Attributes %v; "+
			"want id %q, a new handle, Attributes map[ApproximateReceiveCount:2]",
			again.MessageId, again.ReceiptHandle != m.ReceiptHandle, again.Attributes, sent.MessageId)
	}
	cli.must(nil, "change-message-visibility", "--queue-url", url,
		"--receipt-handle", again.ReceiptHandle, "--visibility-timeout", "120")
	cli.must(nil, "delete-message", "--queue-url", url, "--receipt-handle", again.ReceiptHandle)
	cli.wantCounts(url, "0", "0")
}

// testCLIAttributeTypes: String, Number and Binary attributes; a receive that
// asks for one of them gets the digest of that one only (docs/sqs-behaviour.md §4.2).
func testCLIAttributeTypes(t *testing.T, srv *batonProcess) {
	cli := newAWSCLI(t, srv.URL)
	url := cli.createQueue(srv, "e2e-cli-types")
	typed := map[string]attr{
		"Greeting": {"String", []byte("héllo wörld")},
		"Count":    {"Number", []byte("42")},
		"Blob":     {"Binary", []byte("raw bytes")}, // the CLI v1 sends the text's bytes
	}
	var sent struct{ MD5OfMessageAttributes string }
	cli.must(&sent, "send-message", "--queue-url", url, "--message-body", "typed",
		"--message-attributes", `{"Greeting":{"DataType":"String","StringValue":"héllo wörld"},`+
			`"Count":{"DataType":"Number","StringValue":"42"},"Blob":{"DataType":"Binary","BinaryValue":"raw bytes"}}`)
	if want := attributesMD5(typed); sent.MD5OfMessageAttributes != want {
		t.Errorf("send-message with String, Number, Binary: MD5OfMessageAttributes = %s, want %s", sent.MD5OfMessageAttributes, want)
	}
	m := cli.receive(url, 1, "--message-attribute-names", "Count")[0]
	countOnly := map[string]attr{"Count": typed["Count"]}
	if want := attributesMD5(countOnly); m.MD5OfMessageAttributes != want ||
		!maps.Equal(m.MessageAttributes, map[string]cliAttr{"Count": {DataType: "Number", StringValue: "42"}}) {
		t.Errorf("receive-message --message-attribute-names Count = %+v with MD5 %s, want only Count with MD5 %s",
			m.MessageAttributes, m.MD5OfMessageAttributes, want)
	}
	cli.must(nil, "change-message-visibility", "--queue-url", url,
		"--receipt-handle", m.ReceiptHandle, "--visibility-timeout", "0")
	m = cli.receive(url, 1, "--message-attribute-names", "All")[0]
	wantAttrs := map[string]cliAttr{
		"Greeting": {DataType: "String", StringValue: "héllo wörld"},
		"Count":    {DataType: "Number", StringValue: "42"},
		"Blob":     {DataType: "Binary", BinaryValue: base64.StdEncoding.EncodeToString([]byte("raw bytes"))},
	}
	if want := attributesMD5(typed); m.MD5OfMessageAttributes != want || !maps.Equal(m.MessageAttributes, wantAttrs) {
		t.Errorf("receive-message --message-attribute-names All = %+v with MD5 %s, want %+v with MD5 %s",
			m.MessageAttributes, m.MD5OfMessageAttributes, wantAttrs, want)
	}
	cli.must(nil, "delete-message", "--queue-url", url, "--receipt-handle", m.ReceiptHandle)
	cli.wantCounts(url, "0", "0")
}

// testCLIBatches: the three batch commands, an invalid receipt handle being a
// per-entry failure rather than a request error.
func testCLIBatches(t *testing.T, srv *batonProcess) {
	cli := newAWSCLI(t, srv.URL)
	url := cli.createQueue(srv, "e2e-cli-batches")
	var sent batchResult
	cli.must(&sent, "send-message-batch", "--queue-url", url, "--entries",
		`[{"Id":"a","MessageBody":"batch a"},{"Id":"b","MessageBody":"batch b","DelaySeconds":0},`+
			`{"Id":"c","MessageBody":"batch c","MessageAttributes":{"Foo":{"DataType":"String","StringValue":"Bar"}}}]`)
	if got := sent.successfulIDs(); !slices.Equal(got, []string{"a", "b", "c"}) || len(sent.Failed) != 0 {
		t.Fatalf("send-message-batch Successful ids %q, Failed %+v; want a, b, c and none", got, sent.Failed)
	}
	for _, s := range sent.Successful {
		wantAttrMD5 := ""
		if s.Id == "c" {
			wantAttrMD5 = "ae7155c6026991b6d54b11589678bf9c"
		}
		if s.MessageId == "" || s.MD5OfMessageBody != md5Hex("batch "+s.Id) || s.MD5OfMessageAttributes != wantAttrMD5 {
			t.Errorf("send-message-batch entry %s = %+v, want a MessageId, MD5OfMessageBody %s, MD5OfMessageAttributes %q",
				s.Id, s, md5Hex("batch "+s.Id), wantAttrMD5)
		}
	}
	// entries lists the messages by the id they were sent with, then an entry
	// "bad" whose handle was never issued; extra goes into every entry.
	entries := func(msgs []cliMessage, extra map[string]any) string {
		var list []map[string]any
		add := func(id, handle string) {
			e := map[string]any{"Id": id, "ReceiptHandle": handle}
			maps.Copy(e, extra)
			list = append(list, e)
		}
		for _, m := range msgs {
			add(strings.TrimPrefix(m.Body, "batch "), m.ReceiptHandle)
		}
		add("bad", "not-a-receipt-handle")
		b, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	msgs := cli.receive(url, 3)
	var changed batchResult
	cli.must(&changed, "change-message-visibility-batch", "--queue-url", url,
		"--entries", entries(msgs, map[string]any{"VisibilityTimeout": 0}))
	if got := changed.successfulIDs(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("change-message-visibility-batch Successful ids = %q, want a, b, c", got)
	}
	wantInvalidHandle(t, "change-message-visibility-batch", changed.Failed, "bad")
	msgs = cli.receive(url, 3, "--attribute-names", "ApproximateReceiveCount")
	for _, m := range msgs {
		if n := m.Attributes["ApproximateReceiveCount"]; n != "2" {
			t.Errorf("message %q after change-message-visibility-batch 0: ApproximateReceiveCount %q, want 2", m.Body, n)
		}
	}
	var deleted batchResult
	cli.must(&deleted, "delete-message-batch", "--queue-url", url, "--entries", entries(msgs, nil))
	if got := deleted.successfulIDs(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("delete-message-batch Successful ids = %q, want a, b, c", got)
	}
	wantInvalidHandle(t, "delete-message-batch", deleted.Failed, "bad")
	cli.wantCounts(url, "0", "0")
}

// testCLIPurge: purge-queue empties the queue.
func testCLIPurge(t *testing.T, srv *batonProcess) {
	cli := newAWSCLI(t, srv.URL)
	url := cli.createQueue(srv, "e2e-cli-purge")
	cli.must(nil, "send-message", "--queue-url", url, "--message-body", "purge me 1")
	cli.must(nil, "send-message", "--queue-url", url, "--message-body", "purge me 2")
	cli.wantCounts(url, "2", "0")
	cli.must(nil, "purge-queue", "--queue-url", url)
	cli.wantCounts(url, "0", "0")
}

// testCLIFidelity: two answers in which Baton once differed from Amazon SQS
// as the CLI sends the requests. FifoQueue "True" makes a FIFO
// queue and reads back "true" (CreateQueue API reference: "Valid values:
// true, false"); --message-attribute-names takes "Hel.*" as a prefix and
// ".*" as every name (ReceiveMessage API reference: "All or .* … starting
// with a prefix, for example bar.*").
func testCLIFidelity(t *testing.T, srv *batonProcess) {
	cli := newAWSCLI(t, srv.URL)
	var created struct{ QueueUrl string }
	cli.must(&created, "create-queue", "--queue-name", "e2e-cli-capital.fifo", "--attributes", `{"FifoQueue":"True"}`)
	if got := cli.queueAttributes(created.QueueUrl, "All")["FifoQueue"]; got != "true" {
		t.Errorf("create-queue FifoQueue=True: get-queue-attributes FifoQueue = %q, want true", got)
	}

	cli.must(&created, "create-queue", "--queue-name", "e2e-cli-patterns", "--attributes", `{"VisibilityTimeout":"0"}`)
	url := created.QueueUrl
	sent := map[string]attr{
		"Help.Me": {"String", []byte("Me")}, "Hello": {"String", []byte("There")}, "General": {"String", []byte("Kenobi")},
	}
	cli.must(nil, "send-message", "--queue-url", url, "--message-body", "patterns", "--message-attributes",
		`{"Help.Me":{"DataType":"String","StringValue":"Me"},"Hello":{"DataType":"String","StringValue":"There"},`+
			`"General":{"DataType":"String","StringValue":"Kenobi"}}`)
	for _, tt := range []struct {
		pattern string
		want    []string
	}{
		{"Hel.*", []string{"Hello", "Help.Me"}},
		{".*", []string{"General", "Hello", "Help.Me"}},
	} {
		m := cli.receive(url, 1, "--message-attribute-names", tt.pattern)[0]
		want := map[string]attr{}
		for _, name := range tt.want {
			want[name] = sent[name]
		}
		got := slices.Sorted(maps.Keys(m.MessageAttributes))
		if !slices.Equal(got, tt.want) || m.MD5OfMessageAttributes != attributesMD5(want) {
			t.Errorf("receive-message --message-attribute-names %s: attributes %q with MD5 %s, want %q with MD5 %s",
				tt.pattern, got, m.MD5OfMessageAttributes, tt.want, attributesMD5(want))
		}
	}
}

// TestBoto3 runs testdata/boto3_check.py, which drives the same lifecycle
// through boto3 and checks every answer, once per wire protocol: botocore's
// own (AWS JSON 1.0) and Query, forced by rewriting the service model.
func TestBoto3(t *testing.T) {
	t.Parallel()
	needClient(t, "boto3", "python3", "-c", "import boto3")
	for _, protocol := range []string{"json", "query"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			srv := startBaton(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "python3", "e2e/testdata/boto3_check.py", srv.URL, "--protocol", protocol)
			cmd.Dir = moduleRoot
			cmd.Env = clientEnv(t)
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			switch {
			case errors.As(err, &exitErr) && exitErr.ExitCode() == 77:
				// The script cannot force this protocol in the installed
				// botocore: a skip, unless clients are required.
				clientUnusable(t, "boto3_check.py --protocol "+protocol+" cannot run", bytes.TrimSpace(out))
			case err != nil:
				t.Fatalf("python3 e2e/testdata/boto3_check.py %s --protocol %s: %v\n%s", srv.URL, protocol, err, out)
			}
			t.Logf("%s", out)
		})
	}
}

// continueClient sends requests with "Expect: 100-continue" and closes
// bodyRead when the server asks for the body. Go's server asks only once the
// handler starts reading it, so from then on the request is inside the
// handler and shutdown must answer it rather than drop it.
type continueClient struct {
	hc       *http.Client
	once     sync.Once
	bodyRead chan struct{}
	status   atomic.Int64
}

func (c *continueClient) Do(r *http.Request) (*http.Response, error) {
	trace := &httptrace.ClientTrace{Got100Continue: func() { c.once.Do(func() { close(c.bodyRead) }) }}
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), trace))
	r.Header.Set("Expect", "100-continue")
	// The SDK leaves the protocol version zero; net/http honours Expect only
	// on requests that say HTTP/1.1.
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	resp, err := c.hc.Do(r)
	if err == nil {
		c.status.Store(int64(resp.StatusCode))
	}
	return resp, err
}

// TestGracefulShutdown sends SIGTERM to a server holding a 20-second long
// poll: the poll must be answered at once, empty and with 200, and the
// process must exit with status 0.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	srv := startBaton(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	client := testutil.NewClient(srv.URL)
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("e2e-shutdown")})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	cc := &continueClient{
		hc:       &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{ExpectContinueTimeout: 30 * time.Second}},
		bodyRead: make(chan struct{}),
	}
	type result struct {
		out *sqs.ReceiveMessageOutput
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: created.QueueUrl, WaitTimeSeconds: 20, MaxNumberOfMessages: 10,
		}, func(o *sqs.Options) { o.HTTPClient = cc })
		done <- result{out, err, time.Now()}
	}()
	select {
	case <-cc.bodyRead:
	case r := <-done:
		t.Fatalf("long poll returned before SIGTERM: %+v, %v", r.out, r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not start reading the long poll within 10s")
	}

	signalled := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("long poll after SIGTERM: %v, want an empty answer", r.err)
		}
		if len(r.out.Messages) != 0 {
			t.Errorf("long poll after SIGTERM: %d messages, want 0", len(r.out.Messages))
		}
		if got := cc.status.Load(); got != http.StatusOK {
			t.Errorf("long poll after SIGTERM: HTTP status %d, want 200", got)
		}
		if d := r.at.Sub(signalled); d > 5*time.Second {
			t.Errorf("long poll answered %v after SIGTERM, want within 5s", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("long poll not answered 15s after SIGTERM")
	}
	select {
	case <-srv.exited:
		if code := srv.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("exit code after SIGTERM = %d (%v), want 0", code, srv.waitErr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("baton still running 15s after SIGTERM")
	}
	if logs := srv.logs.String(); !strings.Contains(logs, "shutting down") {
		t.Errorf("server output lacks %q:\n%s", "shutting down", logs)
	}
}
