package e2e_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The client libraries of docs/compatibility.md that are not Go modules,
// each in a short real round trip against the built server, which checks
// their SigV4 signatures. (The Go libraries are in e2e/compat, a module of
// its own; the AWS SDKs and the AWS CLI in clients_test.go, gov1_test.go
// and js_test.go.)

// TestSQSConsumer runs e2e/testdata/js/sqs_consumer_check.mjs: sqs-consumer
// (npm, pinned in that directory's package-lock.json) consumes three
// messages, one of whose handlers fails once and is redelivered, and
// deletes them all.
func TestSQSConsumer(t *testing.T) {
	t.Parallel()
	script := filepath.Join(moduleRoot, "e2e", "testdata", "js", "sqs_consumer_check.mjs")
	needClient(t, "sqs-consumer (node, npm ci in e2e/testdata/js)", "node", "--no-warnings", script, "--probe")
	runCompatScript(t, "node", "--no-warnings", script)
}

// TestCeleryKombu runs e2e/testdata/celery_check.py with Debian's Python
// (/usr/bin/python3, where python3-kombu, python3-celery, python3-boto3 and
// python3-pycurl install): kombu's SQS transport puts, gets and acks a
// message, and a Celery worker started in the script runs a task sent with
// delay().
func TestCeleryKombu(t *testing.T) {
	t.Parallel()
	script := filepath.Join(moduleRoot, "e2e", "testdata", "celery_check.py")
	needClient(t, "kombu and Celery (Debian's python3-kombu, python3-celery, python3-boto3, python3-pycurl)", "/usr/bin/python3", script, "--probe")
	runCompatScript(t, "/usr/bin/python3", script)
}

// runCompatScript runs the command with the server's URL as its last
// argument, in the clients' environment, and fails the test on a non-zero
// exit.
func runCompatScript(t *testing.T, command ...string) {
	t.Helper()
	srv := startBatonArgs(t, "--account-id", account, "--access-key-id", "AKIDBATONE2E", "--secret-access-key", "baton-e2e-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, command[0], append(command[1:], srv.URL)...)
	cmd.Dir = moduleRoot
	cmd.Env = clientEnv(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	t.Logf("%s", out)
}
