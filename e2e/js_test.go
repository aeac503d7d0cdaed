package e2e_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestJavaScriptSDK runs e2e/testdata/js/sqs_check.mjs, which drives the
// server through the AWS SDK for JavaScript v3 (@aws-sdk/client-sqs, pinned
// in that directory's package-lock.json; `npm ci` there installs it), on a
// server that checks the SDK's SigV4 signatures.
func TestJavaScriptSDK(t *testing.T) {
	t.Parallel()
	script := filepath.Join(moduleRoot, "e2e", "testdata", "js", "sqs_check.mjs")
	needClient(t, "the AWS SDK for JavaScript v3 (node, npm ci in e2e/testdata/js)", "node", "--no-warnings", script, "--probe")

	// The keys clientEnv gives the SDK, which reads them from the
	// environment.
	srv := startBatonArgs(t, "--account-id", account, "--access-key-id", "AKIDBATONE2E", "--secret-access-key", "baton-e2e-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// --no-warnings: the SDK warns on stderr about future Node.js versions.
	cmd := exec.CommandContext(ctx, "node", "--no-warnings", script, srv.URL)
	cmd.Dir = moduleRoot
	cmd.Env = clientEnv(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s %s: %v\n%s", script, srv.URL, err, out)
	}
	t.Logf("%s", out)
}
