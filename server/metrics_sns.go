package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-sqs/baton/sns"
)

// The per-topic SNS series, all named here (docs/sns.md lists them).
var (
	topicLabels       = []string{"account", "topic", "region"}
	descSNSPublishes  = prometheus.NewDesc("baton_sns_publishes_total", "Publishes fanned out by the topic (each entry of a PublishBatch is one), those answered with an error included.", topicLabels, nil)
	descSNSDeliveries = prometheus.NewDesc("baton_sns_deliveries_total", "Copies of the topic's publishes delivered to a subscribed queue, durable there.", topicLabels, nil)
	descSNSFiltered   = prometheus.NewDesc("baton_sns_filtered_total", "Copies of the topic's publishes not made because a subscription's filter policy left the message out.", topicLabels, nil)
	descSNSFailed     = prometheus.NewDesc("baton_sns_failed_total", "Copies of the topic's publishes not delivered: the queue refused the copy or the store could not take it.", topicLabels, nil)
)

// topicCollector reads the per-topic publish counts from the SNS service
// at scrape time. They count what this node fanned out, since it started:
// sum them over nodes.
type topicCollector struct {
	sns *sns.Service
	// account, if set, is the only account whose topics are collected.
	account string
}

func (topicCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSNSPublishes, descSNSDeliveries, descSNSFiltered, descSNSFailed} {
		ch <- d
	}
}

func (c topicCollector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.sns.TopicCounts(c.account) {
		lv := []string{t.Account, t.Topic, t.Region}
		for d, v := range map[*prometheus.Desc]uint64{descSNSPublishes: t.Publishes, descSNSDeliveries: t.Delivered, descSNSFiltered: t.Filtered, descSNSFailed: t.Failed} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
		}
	}
}
