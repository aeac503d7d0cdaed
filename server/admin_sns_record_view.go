package server

import (
	"net/http"
	"time"

	"github.com/baton-sqs/baton/sns"
)

// The dashboard's views of the record of what SNS did not deliver
// (admin_sns_deliveries.go): one topic's page, and the page of the
// publishes to phone numbers. Each view, streamed live, says how many
// records the page's selection holds and the newest one's number; the page
// reads the records themselves from GET /admin/api/sns/deliveries when
// they change, so that a stream never carries the payloads (up to 64 MiB)
// each second.

// SNSRecordJSON sums up the records a page selects, and the record as a
// whole.
type SNSRecordJSON struct {
	// Selected counts the records the page's selection matches; Last is
	// the newest one's seq, 0 when none.
	Selected int    `json:"selected"`
	Last     uint64 `json:"last"`
	// Kept, Max and Dropped are the node's record over all accounts, as
	// SNSDeliveriesJSON has them; MaxBytes bounds its payloads.
	Kept     int    `json:"kept"`
	Max      int    `json:"max"`
	MaxBytes int    `json:"max_bytes"`
	Dropped  uint64 `json:"dropped"`
}

// TopicPageJSON is the dashboard's view of one topic (GET
// /admin/api/topics/{name}): the topic with its subscriptions and counts,
// and a summary of the records of what was not delivered to its
// subscriptions.
type TopicPageJSON struct {
	Now time.Time `json:"now"`
	// Served is false when the server serves no SNS; Topic is then empty.
	Served bool          `json:"served"`
	Topic  TopicJSON     `json:"topic"`
	Record SNSRecordJSON `json:"record"`
}

// SNSRecordViewJSON is the dashboard's view of the records GET
// /admin/api/sns/record?… selects, with the parameters of GET
// /admin/api/sns/deliveries.
type SNSRecordViewJSON struct {
	Now    time.Time     `json:"now"`
	Served bool          `json:"served"`
	Record SNSRecordJSON `json:"record"`
}

// viewTopic is a topic's page; a topic that does not exist is the SNS
// error NotFound.
func (s *Server) viewTopic(r *http.Request) (any, error) {
	out := TopicPageJSON{Now: s.now(), Topic: TopicJSON{Subscriptions: []SubscriptionJSON{}}, Record: emptyRecord}
	if s.sns == nil {
		return out, nil
	}
	ref := s.adminRef(r)
	region := ref.Region
	if region == "" {
		region = s.engine.Region()
	}
	arn := sns.TopicARN(region, ref.Account, ref.Name)
	t, err := s.topicJSON(r.Context(), sns.Caller{Region: region, Account: ref.Account}, arn)
	if err != nil {
		return nil, err
	}
	for _, tc := range s.sns.TopicCounts(ref.Account) {
		if sns.TopicARN(tc.Region, tc.Account, tc.Topic) == arn {
			t.Publishes, t.Delivered, t.Filtered, t.Failed = tc.Publishes, tc.Delivered, tc.Filtered, tc.Failed
		}
	}
	out.Served, out.Topic = true, t
	out.Record = s.recordSummary(sns.DeliveryFilter{Account: ref.Account, TopicARN: arn})
	return out, nil
}

// viewSNSRecord sums up the records the request's parameters select.
func (s *Server) viewSNSRecord(r *http.Request) (any, error) {
	out := SNSRecordViewJSON{Now: s.now(), Record: emptyRecord}
	if s.sns == nil {
		return out, nil
	}
	out.Served = true
	out.Record = s.recordSummary(s.deliveryFilter(r))
	return out, nil
}

// emptyRecord is the summary of a server that serves no SNS.
var emptyRecord = SNSRecordJSON{Max: sns.MaxDeliveryRecords, MaxBytes: sns.MaxDeliveryBytes}

// recordSummary sums up the records f selects.
func (s *Server) recordSummary(f sns.DeliveryFilter) SNSRecordJSON {
	log := s.sns.Deliveries(f)
	out := emptyRecord
	out.Selected, out.Kept, out.Dropped = len(log.Records), log.Kept, log.Dropped
	if n := len(log.Records); n > 0 {
		out.Last = log.Records[n-1].Seq
	}
	return out
}
