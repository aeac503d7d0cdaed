package bench_test

import (
	"context"
	"testing"

	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// TestSmokePublish runs publish-5 briefly: each publish counts one message
// per subscribed queue, and every queue holds at least the copies counted.
func TestSmokePublish(t *testing.T) {
	t.Parallel()
	srv := startRealTimeServer(t)
	res := mustRun(t, smokeConfig(t, srv.URL, bench.ScenarioPublish5))
	checkCounts(t, res)
	if res.Messages != 5*res.Requests {
		t.Errorf("%d messages for %d publishes, want 5 each", res.Messages, res.Requests)
	}
	for i := 1; i <= 5; i++ {
		name := "smoke-publish-5-sub-" + string(rune('0'+i))
		if got := visibleMessages(t, srv, name); uint64(got) < res.Requests {
			t.Errorf("%s holds %d copies, fewer than the %d publishes counted", name, got, res.Requests)
		}
	}
}

// TestPublishSignedCleansUp runs publish-1 against a server that checks
// signatures (the scenario signs its SNS requests for sns) and, without
// Keep, deletes its topic and queues afterwards.
func TestPublishSignedCleansUp(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t, testutil.Options{Clock: clock.System{},
		Credentials: []sigv4.Credential{{AccessKeyID: "AKIDBENCH", SecretAccessKey: "bench-secret", Account: testutil.Account}}})
	cfg := smokeConfig(t, srv.URL, bench.ScenarioPublish1)
	cfg.Client = mustClient(t, bench.ClientConfig{Endpoint: srv.URL, Conns: 4,
		Credentials: &bench.Credentials{AccessKeyID: "AKIDBENCH", SecretAccessKey: "bench-secret"}})
	cfg.Keep = false
	res := mustRun(t, cfg)
	checkCounts(t, res)
	topics, err := srv.SNSClient().ListTopics(context.Background(), &awssns.ListTopicsInput{})
	if err != nil || len(topics.Topics) != 0 {
		t.Errorf("topics after the run: %v, %v; want none", topics, err)
	}
	queues, err := srv.Client.ListQueues(context.Background(), nil)
	if err != nil || len(queues.QueueUrls) != 0 {
		t.Errorf("queues after the run: %v, %v; want none", queues, err)
	}
}
