package bench_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// The smoke tests run each scenario briefly against an in-process server
// on 127.0.0.1 and check what it counted, never how fast it was. Each run
// is bounded by its duration and by MaxRequests.

const (
	smokeDuration = 1500 * time.Millisecond
	smokeWarmup   = 200 * time.Millisecond
)

// startRealTimeServer starts a server whose clock runs by itself: the long
// polls and leases of the scenarios must end without a test moving time.
func startRealTimeServer(t *testing.T) *testutil.Server {
	return testutil.StartServer(t, testutil.Options{Clock: clock.System{}})
}

func smokeConfig(t *testing.T, endpoint, scenario string) bench.Config {
	t.Helper()
	return bench.Config{
		Client: mustClient(t, bench.ClientConfig{Endpoint: endpoint, Conns: 4}), Scenario: scenario, Target: "baton",
		Concurrency: 4, Duration: smokeDuration, Warmup: smokeWarmup, BodySize: 64,
		Queue: "smoke-" + scenario, Keep: true, MaxRequests: 200_000,
	}
}

func mustRun(t *testing.T, cfg bench.Config) *bench.Result {
	t.Helper()
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run(%s): %v", cfg.Scenario, err)
	}
	return res
}

// checkCounts checks what every scenario's result must satisfy.
func checkCounts(t *testing.T, res *bench.Result) {
	t.Helper()
	if res.ErrorCount != 0 || len(res.Errors) != 0 {
		t.Errorf("%s: errors %v (%d), want none", res.Scenario, res.Errors, res.ErrorCount)
	}
	if res.Requests == 0 || res.Messages == 0 {
		t.Fatalf("%s: %d requests, %d messages, want some of each", res.Scenario, res.Requests, res.Messages)
	}
	if got, want := res.Latency.Count, res.Requests; got != want {
		t.Errorf("%s: latency count %d, want one per request (%d)", res.Scenario, got, want)
	}
	var perAction uint64
	for _, s := range res.Actions {
		perAction += s.Count
	}
	if perAction != res.Requests {
		t.Errorf("%s: per-action counts add up to %d, want %d", res.Scenario, perAction, res.Requests)
	}
	if res.Seconds <= 0 || res.Seconds > 2.5 {
		t.Errorf("%s: measured %vs, want at most the run's duration", res.Scenario, res.Seconds)
	}
	if got, want := res.RequestsPerSecond, float64(res.Requests)/res.Seconds; got != want {
		t.Errorf("%s: %v requests/s, want %v", res.Scenario, got, want)
	}
	if l := res.Latency; !(l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max && l.Max > 0) {
		t.Errorf("%s: latency %+v, want p50 <= p90 <= p99 <= max", res.Scenario, l)
	}
	if res.ProcessCPU <= 0 || res.CPUPerRequest != res.ProcessCPU/time.Duration(res.Requests) {
		t.Errorf("%s: process CPU %v, %v per request for %d requests", res.Scenario, res.ProcessCPU, res.CPUPerRequest, res.Requests)
	}
}

// visibleMessages is the queue's ApproximateNumberOfMessages.
func visibleMessages(t *testing.T, srv *testutil.Server, name string) int {
	t.Helper()
	ctx := context.Background()
	u, err := srv.Client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := srv.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: u.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, c := range out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)] {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestSmokeSend(t *testing.T) {
	t.Parallel()
	srv := startRealTimeServer(t)
	res := mustRun(t, smokeConfig(t, srv.URL, bench.ScenarioSend))
	checkCounts(t, res)
	if res.Messages != res.Requests {
		t.Errorf("%d messages for %d requests, want one each", res.Messages, res.Requests)
	}
	// The queue holds at least what was counted (warm-up and requests cut
	// off at the end come on top).
	if got := visibleMessages(t, srv, "smoke-send"); uint64(got) < res.Messages {
		t.Errorf("the queue holds %d messages, fewer than the %d counted", got, res.Messages)
	}
}

func TestSmokeSendBatch(t *testing.T) {
	t.Parallel()
	srv := startRealTimeServer(t)
	res := mustRun(t, smokeConfig(t, srv.URL, bench.ScenarioSendBatch))
	checkCounts(t, res)
	if res.Messages != 10*res.Requests {
		t.Errorf("%d messages for %d requests, want ten each", res.Messages, res.Requests)
	}
	if got := visibleMessages(t, srv, "smoke-send-batch"); uint64(got) < res.Messages {
		t.Errorf("the queue holds %d messages, fewer than the %d counted", got, res.Messages)
	}
}

func TestSmokeLifecycle(t *testing.T) {
	t.Parallel()
	srv := startRealTimeServer(t)
	res := mustRun(t, smokeConfig(t, srv.URL, bench.ScenarioLifecycle))
	checkCounts(t, res)
	sends, receives, deletes := res.Actions["SendMessageBatch"].Count, res.Actions["ReceiveMessage"].Count, res.Actions["DeleteMessageBatch"].Count
	if sends == 0 || receives == 0 || deletes == 0 {
		t.Fatalf("actions %v, want sends, receives and deletes", res.Actions)
	}
	// Each worker sends, receives, deletes in turn: the counts differ by
	// at most one per worker (and a receive may find nothing to delete).
	if sends+4 < receives || receives+4 < sends || deletes > receives+4 {
		t.Errorf("sends %d, receives %d, deletes %d: not in step", sends, receives, deletes)
	}
	if res.Messages > 10*deletes {
		t.Errorf("%d messages deleted by %d batches of at most ten", res.Messages, deletes)
	}
}

// TestSmokeReceiveDelete works off a backlog of 400 messages with a window
// far longer than that takes: every message is deleted once, the run ends
// when the queue has run out rather than at the window's end, and the rate
// is over the time the messages took, which the result says.
func TestSmokeReceiveDelete(t *testing.T) {
	t.Parallel()
	srv := startRealTimeServer(t)
	const backlog = 400
	u, err := srv.Client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("smoke-receive-delete")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range backlog / 10 {
		entries := make([]types.SendMessageBatchRequestEntry, 10)
		for j := range entries {
			entries[j] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(strconv.Itoa(i*10 + j))}
		}
		if _, err := srv.Client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: u.QueueUrl, Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := smokeConfig(t, srv.URL, bench.ScenarioReceiveDelete)
	cfg.Warmup, cfg.Duration = 0, 2*time.Minute
	start := time.Now()
	res := mustRun(t, cfg)
	took := time.Since(start)
	checkCounts(t, res)
	if res.Messages != backlog {
		t.Errorf("%d messages deleted, want the backlog's %d", res.Messages, backlog)
	}
	if res.Actions["SendMessageBatch"].Count != 0 {
		t.Errorf("actions %v: the scenario sent", res.Actions)
	}
	if took > time.Minute {
		t.Errorf("the run took %v: it did not end when the queue ran out", took)
	}
	if res.Seconds >= took.Seconds() || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "ran out of messages") }) {
		t.Errorf("window %.2fs of a %v run, notes %q: want the window cut at the last delete, and said", res.Seconds, took, res.Notes)
	}
	if got := visibleMessages(t, srv, "smoke-receive-delete"); got != 0 {
		t.Errorf("%d messages left visible", got)
	}
}

func TestSmokeLongPollLatency(t *testing.T) {
	t.Parallel()
	srv := startRealTimeServer(t)
	res := mustRun(t, smokeConfig(t, srv.URL, bench.ScenarioLongPoll))
	checkCounts(t, res)
	d, e := res.Delivery, res.EndToEnd
	if d == nil || e == nil || d.Count == 0 {
		t.Fatalf("delivery %+v, end to end %+v: want measured deliveries", d, e)
	}
	if d.Count > res.Messages || e.Count != d.Count {
		t.Errorf("%d deliveries timed (%d end to end) for %d messages received", d.Count, e.Count, res.Messages)
	}
	if e.P50 < d.P50 {
		t.Errorf("end-to-end p50 %v is below the delivery p50 %v, which it includes", e.P50, d.P50)
	}
	// One probe at a time: as many sends as messages, give or take one.
	if s := res.Actions["SendMessage"].Count; s > res.Messages+1 || res.Messages > s+1 {
		t.Errorf("%d sends for %d messages received", s, res.Messages)
	}
}

func TestSmokeLeaseExpiry(t *testing.T) {
	t.Parallel()
	srv := startRealTimeServer(t)
	cfg := smokeConfig(t, srv.URL, bench.ScenarioLeaseExpiry)
	cfg.Concurrency, cfg.VisibilityTimeout, cfg.Warmup = 2, 1, 0
	cfg.Duration = 2500 * time.Millisecond // a round takes the 1 s lease and then some
	res := mustRun(t, cfg)
	checkCounts(t, res)
	l := res.Lateness
	if l == nil || l.Count == 0 {
		t.Fatalf("lateness %+v, want measured redeliveries", l)
	}
	if l.Count != res.Messages {
		t.Errorf("%d redeliveries timed for %d messages handed out again", l.Count, res.Messages)
	}
	// Every message of a round comes back once: a round is ten.
	if res.Messages%10 != 0 {
		t.Errorf("%d messages handed out again, want whole rounds of ten", res.Messages)
	}
}

// Without Keep the run deletes the queues it created and purges the ones
// that existed.
func TestRunCleansUp(t *testing.T) {
	t.Parallel()
	srv := startRealTimeServer(t)
	srv.MustCreateQueue(t, "existing", nil)
	for _, name := range []string{"existing", "fresh"} {
		cfg := smokeConfig(t, srv.URL, bench.ScenarioSend)
		cfg.Queue, cfg.Keep, cfg.Duration, cfg.Warmup = name, false, 300*time.Millisecond, 0
		if res := mustRun(t, cfg); res.Messages == 0 {
			t.Fatalf("%s: nothing sent", name)
		}
	}
	if got := visibleMessages(t, srv, "existing"); got != 0 {
		t.Errorf("the existing queue holds %d messages after the run, want it purged", got)
	}
	_, err := srv.Client.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("fresh")})
	var qdne *types.QueueDoesNotExist
	if !errors.As(err, &qdne) {
		t.Errorf("GetQueueUrl(fresh) after the run: %v, want QueueDoesNotExist", err)
	}
}

// The load generator's signatures pass the server's SigV4 verification,
// and a wrong secret is refused.
func TestSignedRunAgainstServer(t *testing.T) {
	t.Parallel()
	key := sigv4.Credential{AccessKeyID: "AKIDBENCH", SecretAccessKey: "bench-secret", Account: testutil.Account}
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{key}})
	signed := func(secret string) bench.Config {
		cfg := smokeConfig(t, srv.URL, bench.ScenarioSendBatch)
		cfg.Client = mustClient(t, bench.ClientConfig{Endpoint: srv.URL, Conns: 4, NowFunc: srv.Clock.Now,
			Credentials: &bench.Credentials{AccessKeyID: key.AccessKeyID, SecretAccessKey: secret}})
		cfg.Duration, cfg.Warmup = 300*time.Millisecond, 0
		return cfg
	}
	res := mustRun(t, signed(key.SecretAccessKey))
	if res.ErrorCount != 0 || res.Messages == 0 {
		t.Errorf("signed run: %d messages, errors %v; want messages and no errors", res.Messages, res.Errors)
	}
	_, err := bench.Run(context.Background(), signed("wrong-secret"))
	if err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
		t.Errorf("run with a wrong secret: %v, want SignatureDoesNotMatch", err)
	}
	// Unsigned (a placeholder signature) is refused too.
	cfg := smokeConfig(t, srv.URL, bench.ScenarioSend)
	cfg.Client = mustClient(t, bench.ClientConfig{Endpoint: srv.URL, NowFunc: srv.Clock.Now})
	if _, err := bench.Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "InvalidClientTokenId") {
		t.Errorf("unsigned run: %v, want InvalidClientTokenId", err)
	}
}

// The ceiling runs the throughput scenarios without errors.
func TestSmokeAgainstEcho(t *testing.T) {
	t.Parallel()
	url, stop, err := bench.StartEcho(64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	for _, sc := range bench.Scenarios {
		if !bench.HasCeiling(sc) {
			continue
		}
		cfg := smokeConfig(t, url, sc)
		cfg.Duration, cfg.Warmup, cfg.Target = 300*time.Millisecond, 0, "ceiling"
		res := mustRun(t, cfg)
		if res.ErrorCount != 0 || res.Requests == 0 {
			t.Errorf("%s against the echo: %d requests, errors %v", sc, res.Requests, res.Errors)
		}
		if sc == bench.ScenarioLifecycle && res.Messages != 10*res.Actions["DeleteMessageBatch"].Count {
			t.Errorf("lifecycle against the echo: %d messages for %d deletes of ten", res.Messages, res.Actions["DeleteMessageBatch"].Count)
		}
	}
}

func TestRunRefusesUnknownScenario(t *testing.T) {
	t.Parallel()
	c := mustClient(t, bench.ClientConfig{Endpoint: "http://127.0.0.1:1"})
	_, err := bench.Run(context.Background(), bench.Config{Client: c, Scenario: "nope", Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "unknown scenario") {
		t.Errorf("Run(nope) = %v, want an unknown scenario error", err)
	}
}

// MaxRequests bounds a run whatever its duration.
func TestRunStopsAtMaxRequests(t *testing.T) {
	t.Parallel()
	url, stop, err := bench.StartEcho(8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cfg := smokeConfig(t, url, bench.ScenarioSend)
	cfg.MaxRequests, cfg.Duration, cfg.Warmup = 50, time.Minute, 0
	start := time.Now()
	res := mustRun(t, cfg)
	if res.Requests != 50 {
		t.Errorf("%d requests, want exactly MaxRequests (50)", res.Requests)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the run took %v after its budget ran out", el)
	}
}

// Rounds of one target merge into one result whose counts add up.
func TestMergeResults(t *testing.T) {
	t.Parallel()
	url, stop, err := bench.StartEcho(16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cfg := smokeConfig(t, url, bench.ScenarioLifecycle)
	cfg.Duration, cfg.Warmup = 200*time.Millisecond, 0
	a, b := mustRun(t, cfg), mustRun(t, cfg)
	m := bench.MergeResults(a, b)
	if m.Requests != a.Requests+b.Requests || m.Messages != a.Messages+b.Messages || m.Seconds != a.Seconds+b.Seconds {
		t.Errorf("merged %d requests, %d messages, %vs; want the sums of %+v and %+v", m.Requests, m.Messages, m.Seconds, a, b)
	}
	if m.Latency.Count != m.Requests || m.Latency.Max != max(a.Latency.Max, b.Latency.Max) {
		t.Errorf("merged latency %+v, want %d requests and the larger maximum", m.Latency, m.Requests)
	}
	if got, want := m.Actions["ReceiveMessage"].Count, a.Actions["ReceiveMessage"].Count+b.Actions["ReceiveMessage"].Count; got != want {
		t.Errorf("merged ReceiveMessage count %d, want %d", got, want)
	}
	if got, want := m.RequestsPerSecond, float64(m.Requests)/m.Seconds; got != want {
		t.Errorf("merged rate %v, want %v", got, want)
	}
	if bench.MergeResults() != nil {
		t.Error("MergeResults() of nothing is not nil")
	}
}
