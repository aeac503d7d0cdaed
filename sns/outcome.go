package sns

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
)

// CopyKind is what became of one subscription's copy of a publish.
type CopyKind string

// The outcomes of a copy (docs/sns.md, "Where a message went").
const (
	// CopyDelivered: the copy is durable in the subscription's queue.
	CopyDelivered CopyKind = "delivered"
	// CopyFiltered: the subscription's filter policy did not match, so no
	// copy was made.
	CopyFiltered CopyKind = "filtered"
	// CopyFailed: the copy was not delivered (the queue refused it, or the
	// store could not take it); Reason says why.
	CopyFailed CopyKind = "failed"
	// CopyQueued: an HTTP/S subscription's copy is durable in the
	// delivery queue, to be tried on its endpoint (http.go).
	CopyQueued CopyKind = "queued"
	// CopyRecorded: the subscription's protocol is one Baton delivers
	// nothing to (email, sms, lambda...): what AWS would have sent it is
	// recorded (Service.Deliveries), and nothing is sent.
	CopyRecorded CopyKind = "recorded"
)

// CopyOutcome is what became of one subscription's copy of a publish.
type CopyOutcome struct {
	Subscription string // the subscription's ARN
	Protocol     string
	Endpoint     string // the queue's ARN for sqs
	Kind         CopyKind
	// Policy is, for Filtered, the filter policy that left the message out.
	Policy string
	// Reason is, for Failed, why the copy was not delivered.
	Reason string
	// Warning is, for Delivered, Baton's note that AWS would not have
	// delivered the copy, or might not have: the queue's Policy does not
	// allow the topic (queuepolicy.go). AWS has no such note.
	Warning string
}

func outcomeOf(sub *baton.Subscription, kind CopyKind) CopyOutcome {
	return CopyOutcome{Subscription: SubscriptionARN(sub), Protocol: sub.Protocol, Endpoint: sub.Endpoint, Kind: kind}
}

// delivered is the outcome of a copy durable in its queue.
func delivered(sub *baton.Subscription) CopyOutcome { return outcomeOf(sub, CopyDelivered) }

// filteredOut is the outcome of a subscription whose filter policy left
// the message out: the fan-out reports it for every subscription it skips
// so (pub.note(filteredOut(sub, policy))).
func filteredOut(sub *baton.Subscription, policy string) CopyOutcome {
	o := outcomeOf(sub, CopyFiltered)
	o.Policy = policy
	return o
}

// failed is the outcome of a copy not delivered, and why.
func failed(sub *baton.Subscription, reason string) CopyOutcome {
	o := outcomeOf(sub, CopyFailed)
	o.Reason = reason
	return o
}

// httpOutcome is what became of an HTTP/S subscription's copy, from what
// deliverTo answered.
func httpOutcome(sub *baton.Subscription, o Outcome, err error) CopyOutcome {
	switch {
	case err != nil:
		return failed(sub, err.Error())
	case o == Queued:
		return outcomeOf(sub, CopyQueued)
	case o == Delivered:
		return delivered(sub)
	}
	return failed(sub, "not queued for its endpoint: "+o.String())
}

// PublishRecord is where one publish went: kept in the Service's bounded
// log of recent publishes (RecentPublishes).
type PublishRecord struct {
	MessageID string
	TopicARN  string
	Region    string
	Account   string
	Topic     string
	Subject   string
	At        time.Time
	// Outcomes are the first maxOutcomesKept outcomes, in subscription
	// order, of Copies in all; Delivered, Filtered and Failed count all of
	// them by kind (a copy queued or skipped is in none of the three).
	Outcomes                    []CopyOutcome
	Copies                      int
	Delivered, Filtered, Failed int
	// Err is the error the publish was answered with, "" if it succeeded.
	Err string
}

// TopicCounts are one topic's publish figures since the server started.
type TopicCounts struct {
	Region, Account, Topic string
	// Publishes counts the publishes the topic fanned out, those answered
	// with an error included; Delivered, Filtered and Failed count the
	// subscriptions' copies by outcome.
	Publishes, Delivered, Filtered, Failed uint64
}

const (
	// recentPublishes is how many publishes the log keeps, over all topics.
	recentPublishes = 200
	// maxOutcomesKept is how many outcomes a record keeps of one publish.
	maxOutcomesKept = 50
)

// seen keeps the recent publishes and the per-topic counts. Its zero value
// is ready.
type seen struct {
	mu     sync.Mutex
	recent [recentPublishes]PublishRecord
	n      int // records ever added; the newest is recent[(n-1)%len]
	counts map[[3]string]*TopicCounts
}

// outcomeList gathers a publication's outcomes from the fan-out's goroutines.
type outcomeList struct {
	mu   sync.Mutex
	list []CopyOutcome
}

// note records what became of one subscription's copy.
func (pub *publication) note(o CopyOutcome) {
	pub.outcomes.mu.Lock()
	pub.outcomes.list = append(pub.outcomes.list, o)
	pub.outcomes.mu.Unlock()
}

// record adds a fanned-out publication, and err, what it is answered
// with, to the log and the counts.
func (s *seen) record(pub *publication, err error) {
	region, account, topic := topicOfARN(pub.arn)
	rec := PublishRecord{MessageID: pub.id, TopicARN: pub.arn, Region: region, Account: account, Topic: topic, At: pub.at}
	if pub.Subject != nil {
		rec.Subject = *pub.Subject
	}
	if err != nil {
		rec.Err = err.Error()
	}
	pub.outcomes.mu.Lock()
	list := pub.outcomes.list
	pub.outcomes.mu.Unlock()
	slices.SortFunc(list, func(a, b CopyOutcome) int { return strings.Compare(a.Subscription, b.Subscription) })
	for _, o := range list {
		switch o.Kind {
		case CopyDelivered:
			rec.Delivered++
		case CopyFiltered:
			rec.Filtered++
		case CopyFailed:
			rec.Failed++
		}
	}
	rec.Outcomes, rec.Copies = list[:min(len(list), maxOutcomesKept)], len(list)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.recent[s.n%len(s.recent)] = rec
	s.n++
	if s.counts == nil {
		s.counts = map[[3]string]*TopicCounts{}
	}
	key := [3]string{region, account, topic}
	c := s.counts[key]
	if c == nil {
		c = &TopicCounts{Region: region, Account: account, Topic: topic}
		s.counts[key] = c
	}
	c.Publishes++
	c.Delivered += uint64(rec.Delivered)
	c.Filtered += uint64(rec.Filtered)
	c.Failed += uint64(rec.Failed)
}

// topicOfARN splits a topic ARN checked by parseTopicARN.
func topicOfARN(arn string) (region, account, name string) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 {
		return "", "", arn
	}
	return parts[3], parts[4], parts[5]
}

// RecentPublishes returns the publishes the server fanned out most
// recently (at most 200 over all topics, newest first) of account's
// topics, or every account's if account is "", and of the one topic
// topicARN if it is not "".
func (s *Service) RecentPublishes(account, topicARN string) []PublishRecord {
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	var out []PublishRecord
	for i := s.seen.n - 1; i >= 0 && i >= s.seen.n-len(s.seen.recent); i-- {
		r := s.seen.recent[i%len(s.seen.recent)]
		if (account == "" || r.Account == account) && (topicARN == "" || r.TopicARN == topicARN) {
			out = append(out, r)
		}
	}
	return out
}

// TopicCounts returns the publish figures of account's topics (every
// account's if account is ""), by region, account and topic name. A topic
// appears once it has been published to; its figures stay after it is
// deleted, as counters do.
func (s *Service) TopicCounts(account string) []TopicCounts {
	s.seen.mu.Lock()
	var out []TopicCounts
	for _, c := range s.seen.counts {
		if account == "" || c.Account == account {
			out = append(out, *c)
		}
	}
	s.seen.mu.Unlock()
	slices.SortFunc(out, func(a, b TopicCounts) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Account, b.Account), cmp.Compare(a.Topic, b.Topic))
	})
	return out
}
