package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// The lease doctor for a queue on another SQS endpoint, as an operator on
// AWS would run it: the built `baton serve` with credentials stands in for
// Amazon SQS, the built `baton proxy` forwards to it re-signed with its own
// key, and clients that sign with a key the upstream does not know reach it
// through the proxy alone. The seeds' incidents, in real time with a 1 s
// lease, must read the same through `baton doctor` on the proxy as on the
// upstream itself.
func TestProxyInFrontOfSQS(t *testing.T) {
	t.Parallel()
	const keyID, secret = "AKIDUPSTREAM", "upstream-secret"
	creds := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(creds, []byte(keyID+" "+secret+" "+account+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := startBatonArgs(t, "--credentials-file", creds)
	proxyURL := startProxy(t, up.URL, "AWS_ACCESS_KEY_ID="+keyID, "AWS_SECRET_ACCESS_KEY="+secret)

	// testutil's client signs with AKIDTEST, which the upstream refuses.
	direct := testutil.NewClient(up.URL)
	if _, err := direct.ListQueues(context.Background(), &sqs.ListQueuesInput{}); err == nil {
		t.Fatal("the upstream answered a key it does not know")
	}
	c := testutil.NewClient(proxyURL)
	ctx := context.Background()
	newQueue := func(t *testing.T, name string) string {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String("job")}); err != nil {
			t.Fatal(err)
		}
		return *out.QueueUrl
	}
	receive := func(t *testing.T, url string) (types.Message, time.Time) {
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 5})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Messages) == 1 {
				return out.Messages[0], time.Now()
			}
		}
		t.Fatal("message not handed out within 15 s")
		return types.Message{}, time.Time{}
	}
	doctor := func(t *testing.T, endpoint, queue string) server.LeaseReportJSON {
		cmd := exec.Command(batonBin, "doctor", "--endpoint", endpoint, "--json", queue)
		cmd.Env = append(clientEnv(t), "AWS_ACCESS_KEY_ID="+keyID, "AWS_SECRET_ACCESS_KEY="+secret)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("baton doctor --endpoint %s: %v", endpoint, err)
		}
		var rep server.LeaseReportJSON
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("doctor --json printed %q: %v", out, err)
		}
		return rep
	}
	same := func(t *testing.T, queue, diagnosis string) {
		viaProxy, upstream := doctor(t, proxyURL, queue), doctor(t, up.URL, queue)
		if viaProxy.Diagnosis != diagnosis || upstream.Diagnosis != diagnosis {
			t.Errorf("diagnosis through the proxy %q, on the upstream %q; want %q both\nproxy: %s\nupstream: %s", viaProxy.Diagnosis, upstream.Diagnosis, diagnosis, viaProxy.Advice, upstream.Advice)
		}
		// The proxy dates a lease from the upstream's answer, a round trip
		// after the upstream leased the message, so a count that hangs on
		// the instant of a lapse (expired leases, redeliveries not yet
		// judged) may differ by one on a busy machine; what was received
		// and what came back late may not.
		if viaProxy.LateCompletions != upstream.LateCompletions || viaProxy.LeasesStarted != upstream.LeasesStarted {
			t.Errorf("through the proxy %+v\non the upstream %+v", viaProxy, upstream)
		}
		if !strings.Contains(viaProxy.HistoryNote, "directly are invisible") {
			t.Errorf("the proxy's report does not say what it cannot see: %q", viaProxy.HistoryNote)
		}
	}

	t.Run("three naive workers, handler longer than the lease", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "overrun")
		const work = 3 * time.Second
		var wg sync.WaitGroup
		for range 3 {
			m, start := receive(t, url)
			wg.Go(func() {
				time.Sleep(time.Until(start.Add(work))) // the handler's work
				if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		same(t, "overrun", "lease-too-short")
	})
	t.Run("handlers that never come back", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "failing")
		// The consumer goes on polling: it takes the message again after
		// each lapse, the fourth time after the third lease lapsed (a
		// holder never seen again would be a stopped one).
		for range 4 {
			receive(t, url) // and never delete
		}
		same(t, "failing", "handler-failing")
	})
}

// proxyServing is the line `baton proxy` logs once it accepts requests.
var proxyServing = regexp.MustCompile(`baton proxy serving"? endpoint=(http://127\.0\.0\.1:[0-9]+)`)

// startProxy starts the built `baton proxy` in front of upstream on a free
// port, with env as the AWS credentials it signs with, and stops it when the
// test ends.
func startProxy(t *testing.T, upstream string, env ...string) string {
	t.Helper()
	logs := &serverLog{} // its serving line is not baton serve's: no address is sent
	cmd := exec.Command(batonBin, "proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--region", "us-east-1")
	cmd.Env = append(clientEnv(t), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start baton proxy: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("baton proxy output:\n%s", logs)
		}
	})
	var url string
	testutil.CheckFor(t, 15*time.Second, func() error {
		m := proxyServing.FindStringSubmatch(logs.String())
		if m == nil {
			return errors.New("no \"baton proxy serving\" line yet")
		}
		url = m[1]
		return nil
	})
	return url
}

// An application pointed at the proxy by AWS_ENDPOINT_URL_SQS alone, in the
// AWS SDK for JavaScript v3, which sends a queue's requests to its queue
// URL's host: every queue URL the proxy hands out names the proxy, so the
// client stays on it, and the proxy maps them back to the upstream's. The
// upstream refuses the client's own key, so a call that went around the
// proxy fails the script; and the proxy's lease report must count every
// lease of the queue.
func TestJavaScriptSDKThroughProxy(t *testing.T) {
	t.Parallel()
	script := filepath.Join(moduleRoot, "e2e", "testdata", "js", "sqs_proxy_check.mjs")
	needClient(t, "the AWS SDK for JavaScript v3 (node, npm ci in e2e/testdata/js)", "node", "--no-warnings", script, "--probe")
	const keyID, secret = "AKIDUPSTREAMJS", "upstream-js-secret"
	creds := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(creds, []byte(keyID+" "+secret+" "+account+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := startBatonArgs(t, "--credentials-file", creds)
	proxyURL := startProxy(t, up.URL, "AWS_ACCESS_KEY_ID="+keyID, "AWS_SECRET_ACCESS_KEY="+secret)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--no-warnings", script, "jsproxy")
	cmd.Dir = moduleRoot
	// The JavaScript SDK reads AWS_REGION, not AWS_DEFAULT_REGION.
	cmd.Env = append(clientEnv(t), "AWS_ENDPOINT_URL_SQS="+proxyURL, "AWS_REGION=us-east-1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s through the proxy %s (upstream %s): %v\n%s", script, proxyURL, up.URL, err, out)
	}
	t.Logf("%s", out)

	resp, err := http.Get(proxyURL + "/admin/api/queues/jsproxy/leases")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep server.LeaseReportJSON
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the proxy's lease report: %s, %v", resp.Status, err)
	}
	if rep.LeasesStarted != 3 || rep.LeasesCompleted != 3 {
		t.Fatalf("the proxy saw %d leases begin and %d end, want 3 and 3: %+v", rep.LeasesStarted, rep.LeasesCompleted, rep.LeaseStatsJSON)
	}
}
