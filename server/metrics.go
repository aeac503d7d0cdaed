package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/sns"
)

// metrics holds the server's Prometheus registry.
type metrics struct {
	engine *engine.Engine
	// registry holds what is not per queue; the per-queue series are
	// gathered per scrape, for the scraping key's account (handler).
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// byAction caches each action's success counter and latency histogram
	// (*actionMetrics): finding a child of a vector by its label values
	// hashes them under a lock, which cost more than the observation. The
	// actions are the operation table's, so the cache stays small.
	byAction sync.Map
	// sns, if set, gives the per-topic series (metrics_sns.go).
	sns *sns.Service
	// unread, if set, is told why a scrape's per-queue series could not
	// be read: the store was unavailable.
	unread func(error)
}

type actionMetrics struct {
	ok      prometheus.Counter
	latency prometheus.Observer
}

func newMetrics(e *engine.Engine, extra ...prometheus.Collector) *metrics {
	m := &metrics{
		engine:   e,
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_requests_total", Help: "SQS requests by action and result code (OK for success).",
		}, []string{"action", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baton_request_duration_seconds", Help: "SQS request latency by action (long polls included).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20},
		}, []string{"action"}),
	}
	m.registry.MustRegister(m.requests, m.latency, collectors.NewGoCollector())
	for _, c := range extra {
		m.registry.MustRegister(c)
	}
	return m
}

func (m *metrics) observe(action string, err error, d time.Duration) {
	am := m.forAction(action)
	if err != nil {
		m.requests.WithLabelValues(action, baton.AsError(err).Code.Spec().QueryCode).Inc()
	} else {
		am.ok.Inc()
	}
	am.latency.Observe(d.Seconds())
}

func (m *metrics) forAction(action string) *actionMetrics {
	if am, ok := m.byAction.Load(action); ok {
		return am.(*actionMetrics)
	}
	am, _ := m.byAction.LoadOrStore(action, &actionMetrics{
		ok: m.requests.WithLabelValues(action, "OK"), latency: m.latency.WithLabelValues(action),
	})
	return am.(*actionMetrics)
}

// handler serves /metrics. The per-queue series are those of the account of
// the key that signed the scrape (all queues when authentication is off):
// a key of one account does not see another's queues, as in the admin API.
func (m *metrics) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queues := prometheus.NewRegistry()
		queues.MustRegister(queueCollector{engine: m.engine, account: baton.AccountFromContext(r.Context()), unread: m.unread})
		if m.sns != nil {
			queues.MustRegister(topicCollector{sns: m.sns, account: baton.AccountFromContext(r.Context())})
		}
		promhttp.HandlerFor(prometheus.Gatherers{m.registry, queues}, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	})
}

var (
	// region tells apart the queues of one name in two regions.
	labels        = []string{"account", "queue", "region"}
	descMessages  = prometheus.NewDesc("baton_queue_messages", "Messages in the queue by state (visible, in_flight, delayed).", append(labels, "state"), nil)
	descOldest    = prometheus.NewDesc("baton_queue_oldest_message_age_seconds", "Age of the queue's oldest message.", labels, nil)
	descSent      = prometheus.NewDesc("baton_messages_sent_total", "Messages sent (duplicates excluded).", labels, nil)
	descReceived  = prometheus.NewDesc("baton_messages_received_total", "Messages handed out by receives: leases begun.", labels, nil)
	descDeleted   = prometheus.NewDesc("baton_messages_deleted_total", "Deletes by receipt: leases completed.", labels, nil)
	descExpired   = prometheus.NewDesc(ledger.MetricExpired.Name, ledger.MetricExpired.Help, labels, nil)
	descDLQ       = prometheus.NewDesc("baton_messages_dead_lettered_total", "Messages moved to the dead-letter queue.", labels, nil)
	descLate      = prometheus.NewDesc(ledger.MetricLate.Name, ledger.MetricLate.Help, labels, nil)
	descDupes     = prometheus.NewDesc(ledger.MetricDuplicates.Name, ledger.MetricDuplicates.Help, labels, nil)
	descRenewals  = prometheus.NewDesc(ledger.MetricRenewals.Name, ledger.MetricRenewals.Help, labels, nil)
	descDurations = prometheus.NewDesc(ledger.MetricDuration.Name, ledger.MetricDuration.Help, labels, nil)
	descVisTO     = prometheus.NewDesc("baton_queue_visibility_timeout_seconds", "The queue's VisibilityTimeout attribute.", labels, nil)
	descCeiling   = prometheus.NewDesc("baton_lease_ceiling_margin_seconds",
		"Time left before the oldest running lease reaches 12 hours after its receive, which no renewal can pass (43200 when no lease runs).", labels, nil)
	descHung = prometheus.NewDesc(ledger.MetricHung.Name, ledger.MetricHung.Help, labels, nil)
	descRead = prometheus.NewDesc("baton_queue_series_read",
		"1 if this scrape read the per-queue series from the store; 0 if the store was unavailable: they are left out, as no answer from memory would be the store's.", nil, nil)
)

// queueCollector reads the per-queue figures from the engine at scrape time.
//
// The counters and the lease-duration histogram come from the lease ledger
// and count only what this node originated (ledger.QueueMetrics.Totals):
// the requests it handled and the expiries of the leases it handed out. On
// several nodes sharing a PostgreSQL store, whose ledgers hold every node's
// events, summing a counter over the nodes (sum without(instance)) therefore
// counts each event once. The message gauges are read from the store and
// are the same on every node: take one node's value (max), not the sum. So
// are the lease gauges (the ceiling margin and the hung leases), which
// every node's ledger reckons from the whole cluster's leases: take the
// min of the margin and the max of the hung leases over the nodes.
//
// While the store is unavailable (its database down, its disk failing) the
// queues and their counts cannot be read: the scrape then answers the
// other series, those of the requests (the 503s among them) included, with
// baton_queue_series_read 0 and no per-queue series, rather than failing
// whole (a 500 that would hide the outage's own figures).
type queueCollector struct {
	engine *engine.Engine
	// account, if set, is the only account whose queues are collected.
	account string
	// unread, if set, is told why the store could not be read.
	unread func(error)
}

func (queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRead, descMessages, descOldest, descSent, descReceived, descDeleted, descExpired, descDLQ, descLate, descDupes, descRenewals, descDurations, descVisTO, descCeiling, descHung} {
		ch <- d
	}
}

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	qs, err := c.engine.QueueMetrics(context.Background())
	if errors.Is(err, baton.ErrUnavailable) {
		ch <- prometheus.MustNewConstMetric(descRead, prometheus.GaugeValue, 0)
		if c.unread != nil {
			c.unread(err)
		}
		return
	}
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descMessages, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(descRead, prometheus.GaugeValue, 1)
	for _, q := range qs {
		if c.account != "" && q.Account != c.account {
			continue
		}
		lv := []string{q.Account, q.Name, q.Region}
		gauge := func(d *prometheus.Desc, v float64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(lv, extra...)...)
		}
		counter := func(d *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
		}
		gauge(descMessages, float64(q.Visible), "visible")
		gauge(descMessages, float64(q.InFlight), "in_flight")
		gauge(descMessages, float64(q.Delayed), "delayed")
		gauge(descOldest, q.OldestAge.Seconds())
		gauge(descVisTO, float64(q.VisibilityTimeout))
		gauge(descCeiling, (ledger.MaxLeaseTime - q.OldestLease).Seconds())
		gauge(descHung, float64(q.HungLeases))
		t := q.Totals
		counter(descSent, t.Sent)
		counter(descReceived, t.Received)
		counter(descDeleted, t.Completed)
		counter(descExpired, t.Expired)
		counter(descDLQ, t.DeadLettered)
		counter(descLate, t.Late)
		counter(descDupes, t.Duplicates)
		counter(descRenewals, t.Renewals)
		buckets := make(map[float64]uint64, len(ledger.LeaseDurationBounds))
		for i, b := range ledger.LeaseDurationBounds {
			buckets[b.Seconds()] = q.LeaseDurations[i]
		}
		ch <- prometheus.MustNewConstHistogram(descDurations, t.Finished(), q.LeaseSum.Seconds(), buckets, lv...)
	}
}
