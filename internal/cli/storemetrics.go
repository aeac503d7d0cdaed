package cli

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/pebblestore"
)

var (
	descCommits        = prometheus.NewDesc("baton_store_commits_total", "Batches the embedded store committed to its log (group commits).", nil, nil)
	descCommitChanges  = prometheus.NewDesc("baton_store_committed_changes_total", "Changes those commits held; divided by commits, the mean batch size.", nil, nil)
	descCommitFailures = prometheus.NewDesc("baton_store_commit_failures_total", "Commits that failed and were tried again.", nil, nil)
	descCommitSeconds  = prometheus.NewDesc("baton_store_commit_seconds_total", "Time spent committing; divided by commits, the mean commit latency.", nil, nil)
)

// storeCollector exports a durable store's commit statistics on /metrics.
type storeCollector struct{ s *pebblestore.Store }

func (storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCommits, descCommitChanges, descCommitFailures, descCommitSeconds} {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	ch <- prometheus.MustNewConstMetric(descCommits, prometheus.CounterValue, float64(st.Commits))
	ch <- prometheus.MustNewConstMetric(descCommitChanges, prometheus.CounterValue, float64(st.Changes))
	ch <- prometheus.MustNewConstMetric(descCommitFailures, prometheus.CounterValue, float64(st.Failures))
	ch <- prometheus.MustNewConstMetric(descCommitSeconds, prometheus.CounterValue, st.CommitTime.Seconds())
}

// storeCollectors are the /metrics collectors of the store in use.
func storeCollectors(store baton.Store) []prometheus.Collector {
	if s, ok := store.(*pebblestore.Store); ok {
		return []prometheus.Collector{storeCollector{s}}
	}
	return nil
}
