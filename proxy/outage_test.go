package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/proxy"
	"github.com/baton-sqs/baton/server"
)

// switchCreds are credentials whose access key id can change.
type switchCreds struct{ key atomic.Value }

func (c *switchCreds) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: c.key.Load().(string), SecretAccessKey: upstreamSecret}, nil
}

// leaseReport GETs the proxy's lease report of queue: its status, and the
// report or the error.
func (e *env) leaseReport(t *testing.T, queue string) (int, server.LeaseReportJSON, string) {
	t.Helper()
	resp, err := http.Get(e.url + "/admin/api/queues/" + queue + "/leases")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		server.LeaseReportJSON
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body.LeaseReportJSON, body.Error
}

// While the upstream gives no answer (none at all, or server faults) the
// proxy sees no lease begin or end: its lease report is refused, saying
// why, never a diagnosis (healthy) of the traffic before; once the
// upstream answers again, the report is back.
func TestNoReportWhileTheUpstreamIsDown(t *testing.T) {
	for _, how := range []string{"cut", "503", "credentials"} {
		t.Run(how, func(t *testing.T) { testNoReportWhileTheUpstreamIsDown(t, how) })
	}
}

func testNoReportWhileTheUpstreamIsDown(t *testing.T, how string) {
	creds := &switchCreds{}
	creds.key.Store(upstreamKey)
	logs := &logbuf.Buffer{}
	e := newEnv(t, func(c *proxy.Config) {
		c.Credentials = creds
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	q := e.up.Queue(t, "outage?VisibilityTimeout=30")
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("a")}); err != nil {
		t.Fatal(err)
	}
	deleteOne(t, c, q, receiveOne(t, c, q))
	if status, rep, _ := e.leaseReport(t, "outage"); status != http.StatusOK || rep.Diagnosis != "healthy" {
		t.Fatalf("before the outage: %d %q, want 200 healthy", status, rep.Diagnosis)
	}
	e.wantHealth(t, "before the outage", http.StatusOK, "ok", 0)

	all := func(*http.Request) bool { return true }
	e.tap.mu.Lock()
	switch how {
	case "cut":
		e.tap.cutAnswer = all
	case "503":
		e.tap.loseAnswer = all
	}
	e.tap.mu.Unlock()
	if how == "credentials" {
		creds.key.Store("AKIDTHEUPSTREAMREFUSES")
	}
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q}); errCode(err) != "ServiceUnavailable" && errCode(err) != "InvalidClientTokenId" {
		t.Fatalf("a receive the upstream gave no answer to: %v", err)
	}
	status, rep, why := e.leaseReport(t, "outage")
	if status != http.StatusServiceUnavailable || !strings.Contains(why, "no answer but server faults or refusals of the proxy's credentials since") || rep.Diagnosis != "" {
		t.Fatalf("during the outage: %d, diagnosis %q, error %q; want 503 saying the upstream gives no answer", status, rep.Diagnosis, why)
	}
	e.wantHealth(t, "during the outage", http.StatusServiceUnavailable, "has given no answer", -1)
	// The operator learns of it from the log, once: the clients see the
	// upstream's error as it came, a refusal of the proxy's credentials as
	// if of theirs.
	if n := strings.Count(logs.String(), "the upstream gives no answer"); n != 1 {
		t.Errorf("the log says the outage began %d times, want once:\n%s", n, logs)
	}
	// Nor does the dashboard's queue view show one.
	resp, err := http.Get(e.url + "/admin/api/queues/outage")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatalf("the dashboard's queue view during the outage: %s, want an error", resp.Status)
	}

	e.tap.mu.Lock()
	e.tap.cutAnswer, e.tap.loseAnswer = nil, nil
	e.tap.mu.Unlock()
	creds.key.Store(upstreamKey)
	// With no traffic (a proxy a failing readiness check took out of
	// service), /healthz learns that the upstream is back by asking it,
	// once its last question is old enough.
	e.clock.Advance(5 * time.Second)
	e.wantHealth(t, "once the upstream is back, before any request", http.StatusOK, "ok", 1)
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q}); err != nil {
		t.Fatal(err)
	}
	if status, rep, why := e.leaseReport(t, "outage"); status != http.StatusOK || rep.Diagnosis != "healthy" {
		t.Fatalf("after the outage: %d %q %q, want 200 healthy", status, rep.Diagnosis, why)
	}
	e.wantHealth(t, "after the outage", http.StatusOK, "ok", 0)
	if !strings.Contains(logs.String(), "the upstream answers again") {
		t.Errorf("the log does not say the outage ended:\n%s", logs)
	}
}

// wantHealth GETs the proxy's /healthz and wants status, a body that says
// says, and, unless upstream is -1, that many requests of its own reaching
// the upstream (it never forwards /healthz).
func (e *env) wantHealth(t *testing.T, when string, status int, says string, upstream int) {
	t.Helper()
	e.tap.mu.Lock()
	before := len(e.tap.all)
	e.tap.mu.Unlock()
	defer func() {
		e.tap.mu.Lock()
		defer e.tap.mu.Unlock()
		if n := len(e.tap.all) - before; upstream >= 0 && n != upstream {
			t.Errorf("/healthz %s: %d requests reached the upstream, want %d", when, n, upstream)
		}
	}()
	resp, err := http.Get(e.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != status || !strings.Contains(string(body), says) {
		t.Errorf("/healthz %s: %d %q, want %d saying %q", when, resp.StatusCode, body, status, says)
	}
}

// An upstream back while no request passes is known to be back by the
// lease report itself, as by /healthz: it asks the upstream, rather than
// refusing the report until a consumer's next request.
func TestReportBackWithoutTraffic(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "quiet?VisibilityTimeout=30")
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("a")}); err != nil {
		t.Fatal(err)
	}
	deleteOne(t, c, q, receiveOne(t, c, q))
	e.tap.mu.Lock()
	e.tap.loseAnswer = func(*http.Request) bool { return true }
	e.tap.mu.Unlock()
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q}); errCode(err) != "ServiceUnavailable" {
		t.Fatalf("a receive the upstream answered 503: %v", err)
	}
	if status, _, why := e.leaseReport(t, "quiet"); status != http.StatusServiceUnavailable {
		t.Fatalf("during the outage: %d %q, want 503", status, why)
	}
	e.tap.mu.Lock()
	e.tap.loseAnswer = nil
	before := len(e.tap.all)
	e.tap.mu.Unlock()
	e.clock.Advance(5 * time.Second) // within the minute the queue's timeout is kept
	if status, rep, why := e.leaseReport(t, "quiet"); status != http.StatusOK || rep.Diagnosis != "healthy" {
		t.Fatalf("the upstream back, no request since: %d %q %q, want 200 healthy", status, rep.Diagnosis, why)
	}
	e.tap.mu.Lock()
	defer e.tap.mu.Unlock()
	if n := len(e.tap.all) - before; n != 1 {
		t.Errorf("the report asked the upstream %d times, want once", n)
	}
}
