package sns

import (
	"strings"
	"sync"
	"time"
)

// Baton sends no email or SMS and invokes no Lambda function or Firehose
// stream. What AWS would have sent each of them is recorded instead, for
// tests to read (docs/sns.md, "Other protocols"): every copy the fan-out
// makes for a confirmed email, email-json, sms, lambda or firehose
// subscription whose filter policy matches, and every publish to a phone
// number. The record is this node's, in memory, and holds the
// MaxDeliveryRecords newest; older ones are dropped, and counted.

const (
	// MaxDeliveryRecords is how many recorded copies a server keeps, over
	// all accounts; past it the oldest are dropped.
	MaxDeliveryRecords = 1000
	// MaxDeliveryBytes bounds the bytes of the payloads and attributes
	// kept (a copy may be 256 KiB and more): past it the oldest are
	// dropped too.
	MaxDeliveryBytes = 64 << 20
)

// DeliveryRecord is one copy Baton did not deliver, as AWS would have sent
// it.
type DeliveryRecord struct {
	// Seq numbers the records of this server from 1, in the order made.
	Seq uint64
	// Type is Notification, or SubscriptionConfirmation for the
	// confirmation an email or email-json subscription is sent.
	Type string
	// At is the publish's time.
	At              time.Time
	Region, Account string
	MessageID       string
	// TopicARN and SubscriptionARN are "" for a publish to a phone number.
	TopicARN, SubscriptionARN string
	Protocol                  string
	// Endpoint is the email address, phone number, or Lambda function's or
	// Firehose stream's ARN.
	Endpoint string
	// Subject is an email's subject; "" for the other protocols.
	Subject string
	// Payload is what AWS would have sent: the email's body, the SMS's
	// text, the Lambda event, the Firehose record, the email-json
	// document.
	Payload string
	// Raw: the subscription has RawMessageDelivery (firehose only).
	Raw bool
	// Attributes are the publish's message attributes, in its order (an
	// SMS's AWS.SNS.SMS.SMSType or AWS.SNS.SMS.SenderID among them).
	Attributes []MessageAttribute
}

// DeliveryFilter selects records: each field left "" (or false) matches
// every record. TopicARN matches the topic's ARN or its name.
type DeliveryFilter struct {
	Account, Region, Protocol, Endpoint, TopicARN string
	// Type is Notification or SubscriptionConfirmation.
	Type string
	// Direct selects the publishes to a phone number alone: the records
	// of no topic.
	Direct bool
}

func (f DeliveryFilter) matches(r *DeliveryRecord) bool {
	topicOK := f.TopicARN == "" || r.TopicARN == f.TopicARN ||
		r.TopicARN != "" && !strings.Contains(f.TopicARN, ":") && strings.HasSuffix(r.TopicARN, ":"+f.TopicARN)
	return topicOK && (!f.Direct || r.TopicARN == "") && (f.Type == "" || r.Type == f.Type) && (f.Account == "" || r.Account == f.Account) && (f.Region == "" || r.Region == f.Region) &&
		(f.Protocol == "" || r.Protocol == f.Protocol) && (f.Endpoint == "" || r.Endpoint == f.Endpoint)
}

// deliveryLog is the bounded record. Its zero value is ready.
type deliveryLog struct {
	mu    sync.Mutex
	list  []DeliveryRecord // oldest first
	bytes int              // the list's recordSize, summed
	seq   uint64
	// dropped counts the records dropped for room since the server
	// started; full says a drop was logged since the record last had room.
	dropped uint64
	full    bool
}

// add keeps r, dropping the oldest record if there is no room, and
// reports whether it dropped one for the first time since there was
// room, for the caller to say so once.
func (l *deliveryLog) add(r DeliveryRecord) (firstDrop bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	r.Seq = l.seq
	l.list = append(l.list, r)
	l.bytes += recordSize(&r)
	for len(l.list) > MaxDeliveryRecords || l.bytes > MaxDeliveryBytes && len(l.list) > 1 {
		l.bytes -= recordSize(&l.list[0])
		l.list[0] = DeliveryRecord{} // let its payload go
		l.list = l.list[1:]
		l.dropped++
		firstDrop, l.full = firstDrop || !l.full, true
	}
	return firstDrop
}

// recordSize is what a record counts toward MaxDeliveryBytes.
func recordSize(r *DeliveryRecord) int {
	n := len(r.Payload) + len(r.Subject)
	for _, a := range r.Attributes {
		n += a.size()
	}
	return n
}

// DeliveryLog is what Deliveries answers: the matching records, oldest
// first, and what the record as a whole holds and has dropped.
type DeliveryLog struct {
	Records []DeliveryRecord
	// Kept is how many records the server holds now, over all accounts.
	Kept int
	// Dropped counts the records dropped for room since the server
	// started, over all accounts: a test that finds fewer records than it
	// expects and sees Dropped grow published more than the record holds.
	Dropped uint64
}

// Deliveries returns the recorded copies f matches, oldest first. The
// record is this server's: on a PostgreSQL cluster each node keeps the
// copies of the publishes it answered.
func (s *Service) Deliveries(f DeliveryFilter) DeliveryLog {
	l := &s.records
	l.mu.Lock()
	defer l.mu.Unlock()
	out := DeliveryLog{Records: []DeliveryRecord{}, Kept: len(l.list), Dropped: l.dropped}
	for i := range l.list {
		if f.matches(&l.list[i]) {
			out.Records = append(out.Records, l.list[i])
		}
	}
	return out
}

// ClearDeliveries deletes the recorded copies f matches and returns how
// many.
func (s *Service) ClearDeliveries(f DeliveryFilter) int {
	l := &s.records
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.list[:0]
	for _, r := range l.list {
		if !f.matches(&r) {
			kept = append(kept, r)
		}
	}
	n := len(l.list) - len(kept)
	clear(l.list[len(kept):]) // let the payloads go
	l.list = kept
	l.bytes = 0
	for i := range l.list {
		l.bytes += recordSize(&l.list[i])
	}
	if n > 0 {
		l.full = false
	}
	return n
}

// keep records a copy, and says once, when the record first drops one for
// room, that it does.
func (s *Service) keep(r DeliveryRecord) {
	if s.records.add(r) {
		s.log.Warn("sns: the record of copies Baton does not deliver is full; the oldest are dropped (read and clear it: GET and DELETE /admin/api/sns/deliveries)",
			"max", MaxDeliveryRecords)
	}
}
