package e2e_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/sdkhttp"
)

// The commands docs/migrating.md gives, run as a user of each emulator
// would run them, with the files under docs/migrating.

// httpGet fetches a URL and returns its status and body.
func httpGet(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMigrateFromLocalStack: LocalStack's init hooks run unchanged with the
// AWS CLI, its health check and message peek answer in its shape, and an
// SDK configured with LocalStack's host names (resolved here by a custom
// dialer, as public DNS resolves them to 127.0.0.1) is served with
// --allow-host localhost.localstack.cloud.
func TestMigrateFromLocalStack(t *testing.T) {
	t.Parallel()
	needClient(t, "the AWS CLI", "aws", "--version")
	srv := startBatonArgs(t, "--store", "memory", "--allow-host", "localhost.localstack.cloud")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hooks := exec.CommandContext(ctx, "bash", filepath.Join("..", "docs", "migrating", "localstack", "run-init.sh"))
	hooks.Env = append(clientEnv(t), "BATON_URL="+srv.URL)
	if out, err := hooks.CombinedOutput(); err != nil || !strings.Contains(string(out), "queues ready") {
		t.Fatalf("run-init.sh: %v\n%s", err, out)
	}

	if code, body := httpGet(t, srv.URL+"/_localstack/health"); code != http.StatusOK || !strings.Contains(body, `"sqs": "running"`) {
		t.Errorf("/_localstack/health: %d %s", code, body)
	}

	addr := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	dialer := &net.Dialer{}
	c := sqs.New(sqs.Options{
		BaseEndpoint: aws.String("http://sqs.us-east-1.localhost.localstack.cloud:" + port), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), RetryMaxAttempts: 1,
		HTTPClient: sdkhttp.Client(&http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		}}}),
	})
	got, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatalf("GetQueueUrl by LocalStack's host name: %v", err)
	}
	if want := "http://sqs.us-east-1.localhost.localstack.cloud:" + port + "/000000000000/orders"; *got.QueueUrl != want {
		t.Errorf("queue URL %s, want LocalStack's shape %s", *got.QueueUrl, want)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: got.QueueUrl, AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil || attrs.Attributes["VisibilityTimeout"] != "45" || !strings.Contains(attrs.Attributes["RedrivePolicy"], "orders-dlq") {
		t.Errorf("orders as the init hook made it: %v %v", attrs, err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: got.QueueUrl, MessageBody: aws.String("peek at me")}); err != nil {
		t.Fatal(err)
	}

	// curl "$BATON_URL/_aws/sqs/messages?QueueUrl=…", twice: nothing leased.
	for range 2 {
		code, body := httpGet(t, srv.URL+"/_aws/sqs/messages?QueueUrl="+url.QueryEscape(*got.QueueUrl))
		if code != http.StatusOK || !strings.Contains(body, "<Body>peek at me</Body>") || !strings.Contains(body, "<Value>0</Value>") {
			t.Errorf("peek: %d %s", code, body)
		}
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: got.QueueUrl, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}})
	if err != nil || len(out.Messages) != 1 || out.Messages[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("after two peeks the message is received for the first time: %+v %v", out, err)
	}
}

// TestMigrateFromElasticMQAndGoaws: baton convert turns each one's queue
// file into Baton's config, baton serve --config creates the queues, the
// AWS CLI finds them, and goaws's health check path answers.
func TestMigrateFromElasticMQAndGoaws(t *testing.T) {
	t.Parallel()
	needClient(t, "the AWS CLI", "aws", "--version")
	for _, tt := range []struct{ format, file, queue, health string }{
		{"elasticmq", "elasticmq.conf", "invoices.fifo", "/"},
		{"goaws", "goaws.yaml", "local-queue2", "/health"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "baton.yaml")
			cmd := exec.Command(batonBin, "convert", tt.format, filepath.Join("..", "docs", "migrating", tt.file), "-o", conf)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("baton convert %s: %v\n%s", tt.format, err, out)
			}
			// The converted file keeps the emulator's port; the test
			// needs a free one, and a flag wins over the file.
			srv := startBatonArgs(t, "--store", "memory", "--config", conf)
			cli := newAWSCLI(t, srv.URL)
			var list struct{ QueueUrls []string }
			cli.must(&list, "list-queues")
			if !strings.Contains(strings.Join(list.QueueUrls, " "), "/000000000000/"+tt.queue) {
				t.Errorf("list-queues: %v, want %s", list.QueueUrls, tt.queue)
			}
			if code, _ := httpGet(t, srv.URL+tt.health); code != http.StatusOK {
				t.Errorf("GET %s: %d, want 200", tt.health, code)
			}
		})
	}
}

// TestMigrateLocalStackHooksAsLocalStackRunsThem: run-init.sh runs a
// directory of hooks as LocalStack runs a stage's: .sh and .py hooks (a .py
// one with boto3, which finds Baton through AWS_ENDPOINT_URL), a
// directory's files before its subdirectories, every hook even after one
// failed, and then exits 1 naming the failed one.
func TestMigrateLocalStackHooksAsLocalStackRunsThem(t *testing.T) {
	t.Parallel()
	needClient(t, "the AWS CLI", "aws", "--version")
	needClient(t, "boto3", "python3", "-c", "import boto3")
	srv := startBatonArgs(t, "--store", "memory")

	hooks := t.TempDir()
	for name, text := range map[string]string{
		"01-first.sh":      "awslocal sqs create-queue --queue-name first\n",
		"02-fails.sh":      "echo 'this hook fails' >&2\nexit 3\n",
		"03-boto.py":       "import boto3\nboto3.client('sqs').create_queue(QueueName='from-python')\n",
		"04-notes.txt":     "not a hook\n",
		"a-sub/05-deep.sh": "awslocal sqs create-queue --queue-name deep\n",
		"b-last.sh":        "awslocal sqs get-queue-url --queue-name deep >/dev/null || exit 1\n",
	} {
		path := filepath.Join(hooks, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "docs", "migrating", "localstack", "run-init.sh"), hooks)
	cmd.Env = append(clientEnv(t), "BATON_URL="+srv.URL)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "hook failed: "+filepath.Join(hooks, "02-fails.sh")) {
		t.Errorf("run-init.sh with a failing hook: %v, want exit status 1 naming 02-fails.sh\n%s", err, out)
	}
	if !strings.Contains(string(out), "skipping "+filepath.Join(hooks, "04-notes.txt")) {
		t.Errorf("run-init.sh does not say it skipped 04-notes.txt\n%s", out)
	}
	// b-last.sh, a file of the top directory, ran before a-sub's hook made
	// the queue it looks for: it failed too.
	if !strings.Contains(string(out), "hook failed: "+filepath.Join(hooks, "b-last.sh")) {
		t.Errorf("b-last.sh did not run before the subdirectory's hooks\n%s", out)
	}
	cli := newAWSCLI(t, srv.URL)
	var list struct{ QueueUrls []string }
	cli.must(&list, "list-queues")
	for _, q := range []string{"first", "from-python", "deep"} {
		if !slices.ContainsFunc(list.QueueUrls, func(u string) bool { return strings.HasSuffix(u, "/"+q) }) {
			t.Errorf("queue %s missing after run-init.sh: %v\n%s", q, list.QueueUrls, out)
		}
	}
}
