package server

import (
	"net/http"
	"time"

	"github.com/baton-sqs/baton/sns"
)

// What AWS would have sent the SNS subscriptions and phone numbers Baton
// delivers nothing to (email, email-json, sms, lambda, firehose), recorded
// for tests to read and clear (sns/record.go, docs/sns.md "Other
// protocols"), in the request's account:
//
//	GET    /admin/api/sns/deliveries?protocol=&endpoint=&topic=&type=&region=&direct=  → a SNSDeliveriesJSON, oldest first
//	DELETE /admin/api/sns/deliveries?protocol=&endpoint=&topic=&type=&region=&direct=  → {"cleared": N}
//
// Each parameter left out matches every record; topic is a topic's ARN or
// name; type is Notification or SubscriptionConfirmation; direct=true
// selects the publishes to a phone number, which have no topic. The record
// is the answering node's, in memory.

// SNSDeliveriesJSON answers GET /admin/api/sns/deliveries.
type SNSDeliveriesJSON struct {
	// Served is false when the server serves no SNS.
	Served     bool              `json:"served"`
	Deliveries []SNSDeliveryJSON `json:"deliveries"`
	// Kept is how many records the node holds over all accounts, of at
	// most Max (and 64 MiB of payloads); Dropped counts those dropped for
	// room since it started.
	Kept    int    `json:"kept"`
	Max     int    `json:"max"`
	Dropped uint64 `json:"dropped"`
}

// SNSDeliveryJSON is one recorded copy: what AWS would have sent, and
// where.
type SNSDeliveryJSON struct {
	Seq uint64 `json:"seq"`
	// Type is Notification, or SubscriptionConfirmation (email, email-json).
	Type      string    `json:"type"`
	At        time.Time `json:"at"`
	Region    string    `json:"region"`
	MessageID string    `json:"message_id"`
	// TopicARN and SubscriptionARN are left out for a publish to a phone
	// number.
	TopicARN        string `json:"topic_arn,omitempty"`
	SubscriptionARN string `json:"subscription_arn,omitempty"`
	Protocol        string `json:"protocol"`
	Endpoint        string `json:"endpoint"`
	// Subject is an email's.
	Subject           string                          `json:"subject,omitempty"`
	Payload           string                          `json:"payload"`
	Raw               bool                            `json:"raw,omitempty"`
	MessageAttributes map[string]MessageAttributeJSON `json:"message_attributes,omitempty"`
}

// deliveryFilter is the request's filter, in its account.
func (s *Server) deliveryFilter(r *http.Request) sns.DeliveryFilter {
	q := r.URL.Query()
	return sns.DeliveryFilter{Account: s.requestAccount(r), Region: q.Get("region"), Protocol: q.Get("protocol"),
		Endpoint: q.Get("endpoint"), TopicARN: q.Get("topic"), Type: q.Get("type"), Direct: q.Get("direct") == "true"}
}

func (s *Server) adminSNSDeliveries(w http.ResponseWriter, r *http.Request) {
	out := SNSDeliveriesJSON{Deliveries: []SNSDeliveryJSON{}, Max: sns.MaxDeliveryRecords}
	if s.sns == nil {
		writeJSON(w, out)
		return
	}
	log := s.sns.Deliveries(s.deliveryFilter(r))
	out.Served, out.Kept, out.Dropped = true, log.Kept, log.Dropped
	for _, d := range log.Records {
		out.Deliveries = append(out.Deliveries, snsDeliveryJSON(d))
	}
	writeJSON(w, out)
}

// adminClearSNSDeliveries deletes records. A browser sends no DELETE to
// another site without a CORS preflight, which this server never
// approves; checkCrossSite refuses what it marks as another site's.
func (s *Server) adminClearSNSDeliveries(w http.ResponseWriter, r *http.Request) {
	if err := checkCrossSite(r); err != nil {
		writeAdminError(w, http.StatusForbidden, "admin actions: "+err.Error())
		return
	}
	n := 0
	if s.sns != nil {
		n = s.sns.ClearDeliveries(s.deliveryFilter(r))
	}
	writeJSON(w, map[string]int{"cleared": n})
}

func snsDeliveryJSON(d sns.DeliveryRecord) SNSDeliveryJSON {
	j := SNSDeliveryJSON{Seq: d.Seq, Type: d.Type, At: d.At.UTC(), Region: d.Region, MessageID: d.MessageID, TopicARN: d.TopicARN,
		SubscriptionARN: d.SubscriptionARN, Protocol: d.Protocol, Endpoint: d.Endpoint, Subject: d.Subject, Payload: d.Payload, Raw: d.Raw}
	if len(d.Attributes) > 0 {
		j.MessageAttributes = make(map[string]MessageAttributeJSON, len(d.Attributes))
		for _, a := range d.Attributes {
			j.MessageAttributes[a.Name] = MessageAttributeJSON{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue}
		}
	}
	return j
}
