package cli_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/cli"
)

// TestCLIStateSigned: reset, export and import reach a server that checks
// signatures, each acting for the key's account only; a wrong secret is
// refused and changes nothing.
func TestCLIStateSigned(t *testing.T) {
	t.Parallel()
	addr := serve(t, cli.ServeConfig{AccessKeyID: "AKIDSTATE", SecretAccessKey: "state-secret", AccountID: "555555555555"})
	url := "http://" + addr
	c := client(url, "AKIDSTATE", "state-secret", http.DefaultClient)
	q, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("kept")}); err != nil {
		t.Fatal(err)
	}
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
	got, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != "kept" {
		t.Errorf("receive after the import: %v %v", err, got)
	}
}
