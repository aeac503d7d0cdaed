package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	dto "github.com/prometheus/client_model/go"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server"
)

// scrapeAs scrapes /metrics signed with cred's key.
func scrapeAs(t *testing.T, srv *testutil.Server, cred sigv4.Credential) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	signNoBody(t, req, cred, srv.Clock.Now())
	return scrapeRequest(t, req)
}

// queuesIn lists the queue label values of family name.
func queuesIn(fams map[string]*dto.MetricFamily, name string) map[string]bool {
	out := map[string]bool{}
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "queue" {
				out[l.GetValue()] = true
			}
		}
	}
	return out
}

// A key of one account sees its own account's queues on /metrics, not
// another's (names, counts and traffic were all there for any valid key).
func TestMetricsScopedToAccount(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	srv.MustCreateQueue(t, "alices", nil) // the server's client signs as alice
	if _, err := srv.ClientFor(bob.AccessKeyID, bob.SecretAccessKey).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bobs")}); err != nil {
		t.Fatal(err)
	}
	if got := queuesIn(scrapeAs(t, srv, bob), "baton_queue_messages"); !got["bobs"] || got["alices"] {
		t.Errorf("bob's /metrics shows queues %v, want bobs only", got)
	}
	if got := queuesIn(scrapeAs(t, srv, alice), "baton_queue_messages"); !got["alices"] || got["bobs"] {
		t.Errorf("alice's /metrics shows queues %v, want alices only", got)
	}
}

// Prometheus cannot sign a scrape with SigV4; it sends HTTP Basic
// credentials (basic_auth in its scrape config), which /metrics takes as
// the dashboard does: the access key id and its secret, scoped to the key's
// account. A wrong secret is refused.
func TestMetricsBasicAuth(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	srv.MustCreateQueue(t, "alices", nil)
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(bob.AccessKeyID, bob.SecretAccessKey)
	if got := queuesIn(scrapeRequest(t, req), "baton_queue_messages"); got["alices"] {
		t.Errorf("bob's Basic scrape shows queues %v, want none of alice's", got)
	}
	req.SetBasicAuth(alice.AccessKeyID, alice.SecretAccessKey)
	if got := queuesIn(scrapeRequest(t, req), "baton_queue_messages"); !got["alices"] {
		t.Errorf("alice's Basic scrape shows queues %v, want alices", got)
	}
	req.SetBasicAuth(alice.AccessKeyID, "wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong secret: %s, want 401", resp.Status)
	}
}

// A request refused while its parameters are read is counted in
// baton_requests_total like any other error.
func TestMetricsCountDecodeErrors(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "counted", nil)
	if resp, out := rawJSON(t, srv.URL, "ReceiveMessage", map[string]any{"QueueUrl": url, "MaxNumberOfMessages": "ten"}); resp.StatusCode == http.StatusOK {
		t.Fatalf("ReceiveMessage with a string count accepted: %v", out)
	}
	m := value(t, scrape(t, srv.URL), "baton_requests_total", map[string]string{"action": "ReceiveMessage", "code": "SerializationException"})
	if got := m.GetCounter().GetValue(); got != 1 {
		t.Errorf("baton_requests_total{action=ReceiveMessage,code=SerializationException} = %v, want 1", got)
	}
}

// The admin API's queue list has every queue, not the first 1,000 that one
// ListQueues call returns.
func TestAdminQueueListEveryQueue(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	const n = 1005
	for i := range n {
		if _, err := srv.Engine.CreateQueue(ctx, engine.CreateQueueParams{Account: "000000000000", Name: fmt.Sprintf("q%04d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var list server.QueueListJSON
	getJSON(t, srv.URL+"/admin/api/queues", &list)
	if len(list.Queues) != n {
		t.Errorf("/admin/api/queues lists %d queues, want %d", len(list.Queues), n)
	}
}

// A purge takes its in-flight messages' leases away: they are not later
// counted as expired, the queue is not diagnosed handler-failing, and no
// active lease is listed for a message that is gone.
func TestPurgeEndsLeases(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "purged", map[string]string{"VisibilityTimeout": "30"})
	mustSend(t, srv.Client, url, "a")
	receiveOne(t, srv.Client, url, nil)
	if code := post(t, srv.URL+"/admin/api/queues/purged/purge", "{}", nil); code != http.StatusOK {
		t.Fatalf("purge: %d", code)
	}
	var leases server.ActiveLeasesJSON
	getJSON(t, srv.URL+"/admin/api/queues/purged/active-leases", &leases)
	if len(leases.Leases) != 0 {
		t.Errorf("after the purge, %d active leases, want 0", len(leases.Leases))
	}
	srv.Clock.Advance(31 * time.Second)
	q := map[string]string{"queue": "purged", "account": testutil.Account}
	if got := value(t, scrape(t, srv.URL), "baton_lease_expired_total", q).GetCounter().GetValue(); got != 0 {
		t.Errorf("baton_lease_expired_total = %v after purging an in-flight message, want 0", got)
	}
	var list server.QueueListJSON
	getJSON(t, srv.URL+"/admin/api/queues", &list)
	if d := list.Queues[0].Diagnosis; d != "healthy" {
		t.Errorf("diagnosis after the purge: %q, want healthy", d)
	}
}
