package sns_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/baton-sqs/baton/sns"
)

// TestNotificationStringToSign pins the string a Notification's signature
// covers, built from a notification AWS delivered to an SQS queue
// (ap-southeast-1, 2023): the members Message, MessageId, Subject,
// Timestamp (milliseconds), TopicArn and Type, each "name\nvalue\n", in
// that order; its digests are those the two SignatureVersions sign.
func TestNotificationStringToSign(t *testing.T) {
	t.Parallel()
	subject := "New Order"
	at := time.Date(2023, 4, 1, 10, 30, 58, 691000000, time.UTC)
	got := sns.NotificationStringToSign("0307bc0b-c7d5-524e-b462-e0a9cdf7bd18", "arn:aws:sns:ap-southeast-1:377115435266:TransactionsTopic",
		&subject, "Your order has been successful", at)
	want := "Message\nYour order has been successful\nMessageId\n0307bc0b-c7d5-524e-b462-e0a9cdf7bd18\nSubject\nNew Order\n" +
		"Timestamp\n2023-04-01T10:30:58.691Z\nTopicArn\narn:aws:sns:ap-southeast-1:377115435266:TransactionsTopic\nType\nNotification\n"
	if got != want {
		t.Fatalf("string to sign:\n%q\nwant\n%q", got, want)
	}
	if len(got) != 224 {
		t.Errorf("%d bytes, want 224", len(got))
	}
	s1, s256 := sha1.Sum([]byte(got)), sha256.Sum256([]byte(got))
	if h := hex.EncodeToString(s1[:]); h != "af4ad609271c26aa1d1b8ae13c209ed6a5f3c91f" {
		t.Errorf("SHA1 %s", h)
	}
	if h := hex.EncodeToString(s256[:]); h != "0d57982c1c8246da6abf610b68ef476da8e2b4c92a6e523f64cdbfaf33041abf" {
		t.Errorf("SHA256 %s", h)
	}
	// Without a subject the member is left out.
	if got := sns.NotificationStringToSign("i", "a", nil, "m", at); got != "Message\nm\nMessageId\ni\nTimestamp\n2023-04-01T10:30:58.691Z\nTopicArn\na\nType\nNotification\n" {
		t.Errorf("without a subject: %q", got)
	}
}
