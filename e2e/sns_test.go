package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

// TestBoto3SNS runs testdata/boto3_sns_check.py, which drives a topic's life
// through boto3's SNS client against the built server and checks every
// answer, the envelope and its signature among them.
func TestBoto3SNS(t *testing.T) {
	t.Parallel()
	needClient(t, "boto3", "python3", "-c", "import boto3")
	srv := startBaton(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "e2e/testdata/boto3_sns_check.py", srv.URL)
	cmd.Dir = moduleRoot
	cmd.Env = clientEnv(t)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 77:
		clientUnusable(t, "boto3_sns_check.py cannot run", bytes.TrimSpace(out))
	case err != nil:
		t.Fatalf("python3 e2e/testdata/boto3_sns_check.py %s: %v\n%s", srv.URL, err, out)
	}
	t.Logf("%s", out)
}
