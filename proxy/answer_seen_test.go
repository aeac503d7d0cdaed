package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/server"
)

// A receive whose answer the proxy could not write to its client is no
// sign the client is there: a host gone (a network cut) whose long poll,
// sent before, comes back with messages, or with none, after the client's
// leases lapsed. The proxy sees its client only once its answer went out,
// as baton serve does (ledger.Answer): the lapse before reads as a holder
// that stopped, not one that failed and went on making requests, which it
// read as when the upstream's answer marked the client seen.
func TestAnswerLostSeesNoClientThroughProxy(t *testing.T) {
	for _, tc := range []struct {
		name string
		// messages the late receive finds; went: its answer went out.
		messages int
		went     bool
		want     string
	}{
		{"leases, lost", 3, false, ledger.DiagnosisHoldersStopped},
		{"nothing, lost", 0, false, ledger.DiagnosisHoldersStopped},
		{"leases, went out", 3, true, ledger.DiagnosisHandlerFailing},
		{"nothing, went out", 0, true, ledger.DiagnosisHandlerFailing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			q := e.up.Queue(t, "jobs?VisibilityTimeout=30")
			other := e.client("AKIDOTHER", "other") // another host's worker: the SDK's user agent
			send := func(n int) {
				for range n {
					if _, err := other.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job")}); err != nil {
						t.Fatal(err)
					}
				}
			}
			send(3)
			e.at(1)
			if n := receiveAs(t, e, q, "worker-c/1.0", ""); n != 3 {
				t.Fatalf("received %d, want 3", n)
			}
			e.at(35) // their leases lapsed at 31; the other worker does them
			doAll(t, other, q, 3)
			send(tc.messages)
			e.at(40) // c's host is gone; its long poll comes back
			if !tc.went {
				e.front.mu.Lock()
				e.front.cut = func(r *http.Request) bool { return r.UserAgent() == "worker-c/1.0" }
				e.front.mu.Unlock()
			}
			if n := receiveAs(t, e, q, "worker-c/1.0", ""); tc.went && n != tc.messages {
				t.Fatalf("the late receive: %d messages, want %d", n, tc.messages)
			}
			wantFindingVia(t, e, "jobs", tc.want)
		})
	}
}

// receiveAs receives up to 10 messages of queueURL through the proxy as
// the client of user agent ua, with the ReceiveRequestAttemptId attempt
// if not empty, and returns how many it got, 0 if its answer never came,
// once the proxy is done with the request.
func receiveAs(t *testing.T, e *env, queueURL, ua, attempt string) int {
	t.Helper()
	done := make(chan struct{}, 1)
	e.front.watch(nil, func(r *http.Request) {
		if r.UserAgent() == ua {
			select {
			case done <- struct{}{}:
			default:
			}
		}
	})
	defer e.front.watch(nil, nil)
	req := bigReceive(t, e.url, queueURL, ua)
	if attempt != "" {
		req.Body = io.NopCloser(strings.NewReader(fmt.Sprintf(`{"QueueUrl":%q,"MaxNumberOfMessages":10,"ReceiveRequestAttemptId":%q}`, queueURL, attempt)))
		req.ContentLength = -1
	}
	n := 0
	if resp, err := http.DefaultClient.Do(req); err == nil {
		var out struct{ Messages []json.RawMessage }
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
			t.Fatalf("the receive as %s: %s", ua, resp.Status)
		}
		resp.Body.Close()
		n = len(out.Messages)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy was not done with the receive within 30 s")
	}
	return n
}

// A FIFO receive retried with its ReceiveRequestAttemptId, which the
// proxy reads as the same leases handed out again (ledger.Event.Replay),
// sees its client only once the proxy's answer to it went out, as any
// receive: the retry of a host gone, whose answer is lost as the first's
// was, is no sign the client is there.
func TestReplayAnswerLostSeesNoClientThroughProxy(t *testing.T) {
	for _, tc := range []struct {
		name string
		went bool // the retry's answer went out
		want string
	}{
		{"lost", false, ledger.DiagnosisHoldersStopped},
		{"went out", true, ledger.DiagnosisHandlerFailing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			q := e.up.Queue(t, "jobs.fifo?VisibilityTimeout=30&FifoQueue=true")
			other := e.client("AKIDOTHER", "other")
			send := func(group string) {
				if _, err := other.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job " + group),
					MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(group)}); err != nil {
					t.Fatal(err)
				}
			}
			for _, g := range []string{"g0", "g1", "g2"} {
				send(g)
			}
			e.at(1)
			if n := receiveAs(t, e, q, "worker-c/1.0", ""); n != 3 {
				t.Fatalf("received %d, want 3", n)
			}
			e.at(35) // their leases lapsed at 31; the other worker does them
			doAll(t, other, q, 3)
			send("late")
			// c's host is gone: its receive's answer is lost, and so is
			// the answer of its retry with the same attempt id, unless went.
			e.front.mu.Lock()
			e.front.cut = func(r *http.Request) bool { return r.UserAgent() == "worker-c/1.0" }
			e.front.mu.Unlock()
			for _, at := range []int{36, 40} {
				e.at(at)
				if at == 40 && tc.went {
					e.front.mu.Lock()
					e.front.cut = nil
					e.front.mu.Unlock()
				}
				receiveAs(t, e, q, "worker-c/1.0", "try-1")
			}
			wantFindingVia(t, e, "jobs.fifo", tc.want)
		})
	}
}

// doAll receives the n messages of queueURL by c and deletes them.
func doAll(t *testing.T, c *sqs.Client, queueURL string, n int) {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != n {
		t.Fatalf("received %d, %v; want %d", len(out.Messages), err, n)
	}
	for _, m := range out.Messages {
		if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
}

// wantFindingVia fails the test unless the proxy's report of queue at
// 200 s names want, and, when want is holders-stopped, not
// handler-failing.
func wantFindingVia(t *testing.T, e *env, queue, want string) {
	t.Helper()
	e.at(200)
	var r server.LeaseReportJSON
	e.get(t, e.url, "/admin/api/queues/"+queue+"/leases", &r)
	var k []string
	for _, f := range r.Findings {
		k = append(k, f.Kind)
	}
	if !slices.Contains(k, want) || want == ledger.DiagnosisHoldersStopped && slices.Contains(k, ledger.DiagnosisHandlerFailing) {
		t.Errorf("findings %v; want %s\n%s", k, want, r.Advice)
	}
}
