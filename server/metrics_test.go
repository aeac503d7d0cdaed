package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/baton-sqs/baton/internal/testutil"
)

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	return scrapeRequest(t, req)
}

// scrapeRequest sends req, a GET of /metrics, and parses the answer.
func scrapeRequest(t *testing.T, req *http.Request) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// value finds the sample of family name whose labels include want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no metric family %s", name)
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s has no sample with labels %v", name, want)
	return nil
}

func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "metered", map[string]string{"VisibilityTimeout": "30"})
	mustSend(t, c, url, "a")
	mustSend(t, c, url, "b")
	srv.Clock.Advance(5 * time.Second)
	mustSend(t, c, url, "c")
	m := receiveOne(t, c, url, nil)
	srv.Clock.Advance(2 * time.Second)
	del(t, c, url, m)
	receiveOne(t, c, url, nil) // left to lapse
	srv.Clock.Advance(31 * time.Second)
	rawJSON(t, srv.URL, "GetQueueUrl", map[string]string{}) // MissingParameter

	fams := scrape(t, srv.URL)
	q := map[string]string{"queue": "metered", "account": testutil.Account}
	checks := []struct {
		name  string
		extra map[string]string
		want  float64
	}{
		{"baton_queue_messages", map[string]string{"state": "visible"}, 2},
		{"baton_queue_messages", map[string]string{"state": "in_flight"}, 0},
		{"baton_queue_oldest_message_age_seconds", nil, 38},
		{"baton_messages_sent_total", nil, 3},
		{"baton_messages_received_total", nil, 2},
		{"baton_messages_deleted_total", nil, 1},
		{"baton_lease_expired_total", nil, 1},
		{"baton_lease_late_completions_total", nil, 0},
	}
	for _, ck := range checks {
		labels := map[string]string{}
		for k, v := range q {
			labels[k] = v
		}
		for k, v := range ck.extra {
			labels[k] = v
		}
		s := value(t, fams, ck.name, labels)
		var got float64
		switch {
		case s.Gauge != nil:
			got = s.Gauge.GetValue()
		case s.Counter != nil:
			got = s.Counter.GetValue()
		}
		if got != ck.want {
			t.Errorf("%s%v = %v, want %v", ck.name, ck.extra, got, ck.want)
		}
	}
	h := value(t, fams, "baton_lease_duration_seconds", q).Histogram
	if h.GetSampleCount() != 1 || h.GetSampleSum() < 1.9 || h.GetSampleSum() > 2.1 {
		t.Errorf("lease histogram count %d sum %v, want 1 and 2 s", h.GetSampleCount(), h.GetSampleSum())
	}
	if got := value(t, fams, "baton_requests_total", map[string]string{"action": "SendMessage", "code": "OK"}).Counter.GetValue(); got != 3 {
		t.Errorf("SendMessage OK requests = %v, want 3", got)
	}
	if got := value(t, fams, "baton_requests_total", map[string]string{"action": "GetQueueUrl", "code": "MissingParameter"}).Counter.GetValue(); got != 1 {
		t.Errorf("GetQueueUrl MissingParameter requests = %v, want 1", got)
	}
	if _, ok := fams["baton_request_duration_seconds"]; !ok {
		t.Error("no request latency histogram")
	}
}

// The lease-duration histogram counts each lease exactly against its
// bounds: a 9.99 s lease is at most 10 s, a 10.01 s one is not, and the sum
// is the leases' own (it was the 2% buckets' midpoints: 9.99 s counted
// above 10 s).
func TestMetricsLeaseHistogramExact(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "edges", map[string]string{"VisibilityTimeout": "60"})
	for _, lasted := range []time.Duration{9990 * time.Millisecond, 10010 * time.Millisecond} {
		mustSend(t, c, url, "a")
		m := receiveOne(t, c, url, nil)
		srv.Clock.Advance(lasted)
		del(t, c, url, m)
	}
	h := value(t, scrape(t, srv.URL), "baton_lease_duration_seconds", map[string]string{"queue": "edges"}).Histogram
	var at10 uint64
	for _, b := range h.Bucket {
		if b.GetUpperBound() == 10 {
			at10 = b.GetCumulativeCount()
		}
	}
	if h.GetSampleCount() != 2 || at10 != 1 || h.GetSampleSum() != 20 {
		t.Errorf("count %d, at most 10 s %d, sum %v; want 2, 1 (the 9.99 s lease), 20 s", h.GetSampleCount(), at10, h.GetSampleSum())
	}
}

// A late delete on a FIFO queue is refused (its message is not deleted),
// so /metrics counts no delete for it; but its handler had finished, 42 s
// after the receive, and the lease-duration histogram counts it, with a
// count that agrees with its buckets.
func TestMetricsFifoRefusedLateDelete(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "refused.fifo", map[string]string{"VisibilityTimeout": "30", "FifoQueue": "true", "ContentBasedDeduplication": "true"})
	for _, g := range []string{"a", "b"} {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("job " + g), MessageGroupId: aws.String(g)}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 2 {
		t.Fatalf("received %v, %v", out, err)
	}
	srv.Clock.Advance(2 * time.Second)
	del(t, c, url, out.Messages[0])
	srv.Clock.Advance(40 * time.Second)
	if err := deleteMessage(c, url, out.Messages[1].ReceiptHandle); err == nil {
		t.Fatal("a FIFO queue's late delete succeeded")
	}
	fams := scrape(t, srv.URL)
	q := map[string]string{"queue": "refused.fifo", "account": testutil.Account}
	if got := value(t, fams, "baton_messages_deleted_total", q).Counter.GetValue(); got != 1 {
		t.Errorf("deleted %v, want 1: the refused delete deleted nothing", got)
	}
	h := value(t, fams, "baton_lease_duration_seconds", q).Histogram
	inf := h.Bucket[len(h.Bucket)-1].GetCumulativeCount()
	if h.GetSampleCount() != 2 || inf != 2 || h.GetSampleSum() != 44 {
		t.Errorf("lease histogram count %d, at most 12 h %d, sum %v; want 2, 2, 44 s", h.GetSampleCount(), inf, h.GetSampleSum())
	}
}
