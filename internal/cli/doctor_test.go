package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// baton doctor reports on every queue, not only the first page of 1,000
// that one ListQueues call returns.
func TestDoctorEveryQueue(t *testing.T) {
	t.Parallel()
	url, c := serveSigned(t, "AKIDDOC", "doc-secret", "444444444444")
	const n = 1003
	for i := range n {
		if _, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("q%04d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	env := cliEnv(t, "AWS_ACCESS_KEY_ID=AKIDDOC", "AWS_SECRET_ACCESS_KEY=doc-secret")
	r := runCLI(t, env, nil, "doctor", "--endpoint", url, "--json")
	if r.code != 0 {
		t.Fatalf("baton doctor: %v", r)
	}
	var reports []json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &reports); err != nil {
		t.Fatalf("baton doctor --json: %v\n%.300s", err, r.stdout)
	}
	if len(reports) != n {
		t.Errorf("baton doctor reported on %d queues, want all %d", len(reports), n)
	}
}
