package cli

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/pebblestore"
)

var (
	descCommits        = prometheus.NewDesc("baton_store_commits_total", "Batches the embedded store committed to its log (group commits).", nil, nil)
	descCommitChanges  = prometheus.NewDesc("baton_store_committed_changes_total", "Changes those commits held; divided by commits, the mean batch size.", nil, nil)
	descCommitFailures = prometheus.NewDesc("baton_store_commit_failures_total", "Commits that failed and were tried again.", nil, nil)
	descCommitSeconds  = prometheus.NewDesc("baton_store_commit_seconds_total", "Time spent committing; divided by commits, the mean commit latency.", nil, nil)
	descUnavailable    = prometheus.NewDesc("baton_store_unavailable_total",
		"Calls answered ServiceUnavailable because the disk did not take their commit within the write timeout, or refused while it did not.", nil, nil)
	descBackgroundFailures = prometheus.NewDesc("baton_store_background_write_failures_total",
		"Background writes (flushes, compactions) that failed and are tried again: a full disk, too few file descriptors.", nil, nil)
	descSlowDisk = prometheus.NewDesc("baton_store_slow_disk_operations_total",
		"Disk operations (writes, fsyncs) that took longer than the slow-disk threshold.", nil, nil)
	descDiskFree = prometheus.NewDesc("baton_store_disk_free_bytes",
		"Free space of the file system holding the embedded store's log, when last looked at.", nil, nil)
	descReady = prometheus.NewDesc("baton_store_ready",
		"1 while the store takes writes and its disk reports no problem, 0 while /healthz answers 503 for it.", nil, nil)
)

// storeCollector exports a durable store's commit statistics on /metrics.
type storeCollector struct{ s *pebblestore.Store }

func (storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCommits, descCommitChanges, descCommitFailures, descCommitSeconds,
		descUnavailable, descBackgroundFailures, descSlowDisk, descDiskFree, descReady} {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	ch <- prometheus.MustNewConstMetric(descCommits, prometheus.CounterValue, float64(st.Commits))
	ch <- prometheus.MustNewConstMetric(descCommitChanges, prometheus.CounterValue, float64(st.Changes))
	ch <- prometheus.MustNewConstMetric(descCommitFailures, prometheus.CounterValue, float64(st.Failures))
	ch <- prometheus.MustNewConstMetric(descCommitSeconds, prometheus.CounterValue, st.CommitTime.Seconds())
	ch <- prometheus.MustNewConstMetric(descUnavailable, prometheus.CounterValue, float64(st.Unavailable))
	ch <- prometheus.MustNewConstMetric(descBackgroundFailures, prometheus.CounterValue, float64(st.BackgroundFailures))
	ch <- prometheus.MustNewConstMetric(descSlowDisk, prometheus.CounterValue, float64(st.SlowDiskOps))
	if st.DiskFree >= 0 {
		ch <- prometheus.MustNewConstMetric(descDiskFree, prometheus.GaugeValue, float64(st.DiskFree))
	}
	ready := 1.0
	if c.s.Ping(context.Background()) != nil {
		ready = 0
	}
	ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, ready)
}

// storeCollectors are the /metrics collectors of the store in use.
func storeCollectors(store baton.Store) []prometheus.Collector {
	if s, ok := store.(*pebblestore.Store); ok {
		return []prometheus.Collector{storeCollector{s}}
	}
	return nil
}
