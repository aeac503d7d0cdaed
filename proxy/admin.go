package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/server"
)

// The admin API paths `baton doctor` reads, with the JSON of `baton serve`
// (server.LeaseReportJSON), and /metrics with the lease metrics of its
// queues:
//
//	GET /admin/api/queues/{name}/leases                 the lease report
//	GET /admin/api/queues/{name}/messages/{id}/history  one message's lease events
//	GET /metrics                                        Prometheus text

// BypassNote is said with every report: the proxy knows only the traffic
// that passes it.
const BypassNote = "The proxy sees only the requests that pass through it: consumers (or producers) " +
	"that talk to the upstream SQS endpoint directly are invisible to it, and their leases are not counted."

// adminHandler serves the admin API, /metrics and the dashboard. With a
// verifier it signs requests in as `baton serve` does: a SigV4 signature
// (header or presigned) is checked as the SQS API's; anything else must
// carry HTTP Basic credentials (an access key id and its secret), and is
// asked for them with a 401 challenge, so that a browser can sign in.
func (p *Proxy) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", p.metricsHandler())
	mux.HandleFunc("GET /admin/api/queues/{name}/leases", p.adminLeases)
	mux.HandleFunc("GET /admin/api/queues/{name}/messages/{id}/history", p.adminHistory)
	mux.HandleFunc("GET /admin/api/queues/{name}", serveView(p.viewQueue))
	mux.HandleFunc("GET /admin/api/queues/{name}/messages/{id}", serveView(p.viewMessage))
	mux.Handle("GET /admin/api/events/queues/{name}", server.LiveView(p.viewQueue, p.closing, p.log))
	mux.Handle("GET /admin/api/events/queues/{name}/messages/{id}", server.LiveView(p.viewMessage, p.closing, p.log))
	mux.HandleFunc("/admin/api/", func(w http.ResponseWriter, r *http.Request) {
		adminError(w, http.StatusNotFound, "the proxy serves only the lease views of the admin API: "+
			"message counts, attributes, messages and actions are the upstream's")
	})
	mux.Handle("/", p.dashboardHandler())
	if p.verifier == nil {
		return mux
	}
	basic := server.BasicAuth(p.verifier, p.clock, p.log, mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		q := r.URL.Query()
		sigv4 := (scheme != "" && !strings.EqualFold(scheme, "Basic")) || q.Has("X-Amz-Signature") || q.Has("X-Amz-Credential")
		if !sigv4 {
			basic.ServeHTTP(w, r)
			return
		}
		if _, err := p.verifier.Verify(r, nil); err != nil {
			p.fail(w, r, baton.AsError(err))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// adminQueue returns the queue of the request's name, or writes why not.
func (p *Proxy) adminQueue(w http.ResponseWriter, r *http.Request) *queueInfo {
	q, err := p.lookupQueue(r.Context(), r.PathValue("name"))
	if err != nil {
		viewError(w, err)
		return nil
	}
	return q
}

// viewError answers a failed admin request: 404 for a queue that does not
// exist, 502 when the upstream could not tell.
func viewError(w http.ResponseWriter, err error) {
	e := baton.AsError(err)
	if e.Code == baton.ErrQueueDoesNotExist {
		adminError(w, http.StatusNotFound, e.Message)
		return
	}
	adminError(w, http.StatusBadGateway, e.Message)
}

// lookupQueue returns the queue of a name, asking the upstream for its URL
// if the proxy has seen no request of it.
func (p *Proxy) lookupQueue(ctx context.Context, name string) (*queueInfo, error) {
	p.mu.Lock()
	q, ok := p.byName[name]
	p.mu.Unlock()
	if ok {
		return q, nil
	}
	body, _ := json.Marshal(map[string]string{"QueueName": name})
	h := http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amz-Target": {"AmazonSQS.GetQueueUrl"}}
	status, header, answer, err := p.send(ctx, http.MethodPost, "/", "", h, body)
	var out struct{ QueueUrl string }
	if err != nil {
		return nil, baton.Errorf(baton.ErrServiceUnavailable, "the upstream SQS endpoint could not be reached")
	}
	if status != http.StatusOK || json.Unmarshal(answer, &out) != nil || out.QueueUrl == "" {
		if status == http.StatusBadRequest && strings.Contains(errorCode(header, answer), "NonExistentQueue") {
			return nil, baton.Errorf(baton.ErrQueueDoesNotExist, "The specified queue does not exist.")
		}
		return nil, baton.Errorf(baton.ErrServiceUnavailable, "the upstream did not answer the queue's URL: %s", errorCode(header, answer))
	}
	p.mu.Lock()
	q = p.queue(out.QueueUrl)
	p.mu.Unlock()
	return q, nil
}

func (p *Proxy) adminLeases(w http.ResponseWriter, r *http.Request) {
	q := p.adminQueue(w, r)
	if q == nil {
		return
	}
	_, rep := p.report(r.Context(), q)
	if why := p.upstreamDownNow(r.Context()); why != "" { // outage.go
		adminError(w, http.StatusServiceUnavailable, why)
		return
	}
	writeJSON(w, p.reportJSON(rep))
}

// report is the queue's lease report, with the visibility timeout it was
// reckoned against (0 if it could not be had).
func (p *Proxy) report(ctx context.Context, q *queueInfo) (int, *ledger.LeaseReport) {
	vt := max(p.visibilityTimeout(ctx, q), 0)
	p.mu.Lock()
	redrive := q.redrive
	p.mu.Unlock()
	lq := ledger.Queue{ID: q.id, Name: q.name, VisibilityTimeout: vt, FIFO: q.fifo}
	var rp struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     any    `json:"maxReceiveCount"`
	}
	if json.Unmarshal([]byte(redrive), &rp) == nil {
		lq.DeadLetterTarget = rp.DeadLetterTargetArn
		switch n := rp.MaxReceiveCount.(type) {
		case float64:
			lq.MaxReceiveCount = int(n)
		case string:
			var v int
			if json.Unmarshal([]byte(n), &v) == nil {
				lq.MaxReceiveCount = v
			}
		}
	}
	return vt, p.ledger.Report(lq, p.clock.Now().UTC())
}

func (p *Proxy) adminHistory(w http.ResponseWriter, r *http.Request) {
	q := p.adminQueue(w, r)
	if q == nil {
		return
	}
	id := r.PathValue("id")
	events, ok := p.ledger.History(q.id, id, p.clock.Now())
	if !ok {
		adminError(w, http.StatusNotFound, "no lease history for message "+id)
		return
	}
	out := server.MessageHistoryJSON{Queue: q.name, MessageID: id, Events: server.LeaseEventsToJSON(events)}
	writeJSON(w, out)
}

// reportJSON is the admin API's form of a report, as `baton serve` gives
// it, with a history note that says what the proxy cannot see.
func (p *Proxy) reportJSON(rep *ledger.LeaseReport) server.LeaseReportJSON {
	out := server.LeaseReportToJSON(rep)
	out.HistoryNote = "Lease history is kept in the proxy's memory since it started at " +
		rep.HistorySince.UTC().Format(time.RFC3339) + "; leases before then are not counted. " + BypassNote
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}

func adminError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// The lease metrics, named as `baton serve` names them, per queue the
// proxy has seen, and the proxy's own.
var (
	labels        = []string{"queue"}
	descReceived  = prometheus.NewDesc("baton_messages_received_total", "Messages handed out by receives through the proxy: leases begun.", labels, nil)
	descSent      = prometheus.NewDesc("baton_messages_sent_total", "Messages sent through the proxy.", labels, nil)
	descDeleted   = prometheus.NewDesc("baton_messages_deleted_total", "Deletes by receipt through the proxy: leases completed.", labels, nil)
	descExpired   = prometheus.NewDesc(ledger.MetricExpired.Name, ledger.MetricExpired.Help, labels, nil)
	descLate      = prometheus.NewDesc(ledger.MetricLate.Name, ledger.MetricLate.Help, labels, nil)
	descDupes     = prometheus.NewDesc(ledger.MetricDuplicates.Name, ledger.MetricDuplicates.Help, labels, nil)
	descRenewals  = prometheus.NewDesc(ledger.MetricRenewals.Name, ledger.MetricRenewals.Help, labels, nil)
	descDurations = prometheus.NewDesc(ledger.MetricDuration.Name, ledger.MetricDuration.Help, labels, nil)
	descVisTO     = prometheus.NewDesc("baton_queue_visibility_timeout_seconds", "The queue's VisibilityTimeout attribute, as last fetched.", labels, nil)
	descHung      = prometheus.NewDesc(ledger.MetricHung.Name, ledger.MetricHung.Help, labels, nil)
	descTracked   = prometheus.NewDesc("baton_proxy_tracked_leases", "Leases (receipt handles) the proxy tracks now.", nil, nil)
	descDropped   = prometheus.NewDesc("baton_proxy_leases_dropped_total", "Leases the proxy stopped tracking because it tracked --max-leases already.", nil, nil)
)

type collector struct{ p *Proxy }

func (c collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	p := c.p
	now := p.clock.Now()
	p.mu.Lock()
	qs := make([]*queueInfo, 0, len(p.byName))
	for _, q := range p.byName {
		qs = append(qs, q)
	}
	tracked := len(p.leases.byHandle)
	p.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descTracked, prometheus.GaugeValue, float64(tracked))
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(p.leases.dropped.Load()))
	for _, q := range qs {
		var m ledger.QueueMetrics
		p.ledger.Metrics(q.id, now, &m)
		p.mu.Lock()
		vt := q.visibility
		p.mu.Unlock()
		counter := func(d *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), q.name)
		}
		t := m.Totals
		counter(descSent, t.Sent)
		counter(descReceived, t.Received)
		counter(descDeleted, t.Completed)
		counter(descExpired, t.Expired)
		counter(descLate, t.Late)
		counter(descDupes, t.Duplicates)
		counter(descRenewals, t.Renewals)
		ch <- prometheus.MustNewConstMetric(descHung, prometheus.GaugeValue, float64(m.HungLeases), q.name)
		if vt >= 0 {
			ch <- prometheus.MustNewConstMetric(descVisTO, prometheus.GaugeValue, float64(vt), q.name)
		}
		buckets := make(map[float64]uint64, len(ledger.LeaseDurationBounds))
		for i, b := range ledger.LeaseDurationBounds {
			buckets[b.Seconds()] = m.LeaseDurations[i]
		}
		ch <- prometheus.MustNewConstHistogram(descDurations, t.Finished(), m.LeaseSum.Seconds(), buckets, q.name)
	}
}

func (p *Proxy) metricsHandler() http.Handler {
	p.metricsOnce.Do(func() {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collector{p})
		p.metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	})
	return p.metrics
}
