package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

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
			if n := receiveAs(t, e, q, "worker-c/1.0"); n != 3 {
				t.Fatalf("received %d, want 3", n)
			}
			e.at(35) // their leases lapsed at 31; the other worker does them
			out, err := other.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10})
			if err != nil || len(out.Messages) != 3 {
				t.Fatalf("the other worker received %d, %v; want 3", len(out.Messages), err)
			}
			for _, m := range out.Messages {
				if _, err := other.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: &q, ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Fatal(err)
				}
			}
			send(tc.messages)
			e.at(40) // c's host is gone; its long poll comes back
			if !tc.went {
				e.front.mu.Lock()
				e.front.cut = func(r *http.Request) bool { return r.UserAgent() == "worker-c/1.0" }
				e.front.mu.Unlock()
			}
			if n := receiveAs(t, e, q, "worker-c/1.0"); tc.went && n != tc.messages {
				t.Fatalf("the late receive: %d messages, want %d", n, tc.messages)
			}
			e.at(200)
			var r server.LeaseReportJSON
			e.get(t, e.url, "/admin/api/queues/jobs/leases", &r)
			var k []string
			for _, f := range r.Findings {
				k = append(k, f.Kind)
			}
			if !slices.Contains(k, tc.want) || tc.want == ledger.DiagnosisHoldersStopped && slices.Contains(k, ledger.DiagnosisHandlerFailing) {
				t.Errorf("findings %v; want %s\n%s", k, tc.want, r.Advice)
			}
		})
	}
}

// receiveAs receives up to 10 messages of queueURL through the proxy as
// the client of user agent ua, and returns how many it got; 0 if its
// answer never came.
func receiveAs(t *testing.T, e *env, queueURL, ua string) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(bigReceive(t, e.url, queueURL, ua))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var out struct{ Messages []json.RawMessage }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		t.Fatalf("the receive as %s: %s", ua, resp.Status)
	}
	return len(out.Messages)
}
