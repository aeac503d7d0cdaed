package cli_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/cli"
	"github.com/baton-sqs/baton/internal/testutil"
)

// With the durable store, /metrics carries its group-commit statistics.
func TestServeStoreMetrics(t *testing.T) {
	t.Parallel()
	addr := serve(t, cli.ServeConfig{Store: "sqlite"})
	c := testutil.NewClient("http://" + addr)
	ctx := context.Background()
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("durable")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, name := range []string{"baton_store_commits_total", "baton_store_committed_changes_total", "baton_store_commit_seconds_total"} {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(body)
		if m == nil {
			t.Errorf("no %s in /metrics", name)
			continue
		}
		if v, err := strconv.ParseFloat(string(m[1]), 64); err != nil || v <= 0 {
			t.Errorf("%s = %s, want > 0 after a create and a send", name, m[1])
		}
	}
}
