package sns

import "time"

// NotificationStringToSign exposes the string a Notification's signature
// covers to the tests.
func NotificationStringToSign(messageID, topicARN string, subject *string, message string, at time.Time) string {
	return notificationStringToSign(notification{MessageID: messageID, TopicARN: topicARN, Subject: subject, Message: message, Timestamp: at})
}
