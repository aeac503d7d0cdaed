package sns

import (
	"time"

	"github.com/baton-sqs/baton"
)

// NotificationStringToSign exposes the string a Notification's signature
// covers to the tests.
func NotificationStringToSign(messageID, topicARN string, subject *string, message string, at time.Time) string {
	return notificationStringToSign(notification{MessageID: messageID, TopicARN: topicARN, Subject: subject, Message: message, Timestamp: at})
}

// RecordFiltered records a publish to topicARN that every one of subs
// left out by policy, as the fan-out records one its filter skipped.
func RecordFiltered(s *Service, topicARN, messageID string, subs []*baton.Subscription, policy string) {
	pub := &publication{arn: topicARN, id: messageID}
	for _, sub := range subs {
		pub.note(filteredOut(sub, policy))
	}
	s.seen.record(pub, nil)
}

// CheckSubscriptionAttributes exposes Subscribe's check of its attributes
// (a FilterPolicy with its FilterPolicyScope among them) to the tests.
var CheckSubscriptionAttributes = checkSubscriptionAttributes
