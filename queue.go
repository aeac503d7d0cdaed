package baton

import (
	"strings"
	"time"
)

// Queue is one SQS queue. Its identity on the wire is (region, account,
// name); ID tells a queue apart from an earlier one of the same name, so
// receipt handles of a deleted queue never act on its successor.
type Queue struct {
	ID uint64
	// Region is the AWS region the queue was created in (us-east-1): each
	// region is a namespace of queues of its own.
	Region     string
	Account    string
	Name       string
	Attributes QueueAttributes
	Tags       map[string]string
	CreatedAt  time.Time
	ModifiedAt time.Time
	// PurgedAt is when the last PurgeQueue took effect (zero if never).
	PurgedAt time.Time
	// DedupScope is the DeduplicationScope a FIFO queue was created with:
	// SQS keeps deduplicating that way even if the attribute changes.
	DedupScope string
}

// IsFIFO reports whether the queue is a FIFO queue.
func (q *Queue) IsFIFO() bool { return q.Attributes.FifoQueue }

// ValidRegion reports whether s can name a region: 1 to 64 lowercase
// letters, digits and hyphens, as AWS region names (us-east-1) are.
func ValidRegion(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// IsFIFOName reports whether a queue name names a FIFO queue.
func IsFIFOName(name string) bool { return strings.HasSuffix(name, ".fifo") }

// QueueAttributes are a queue's settable attributes, in typed form. Durations
// are whole seconds as on the wire. Empty strings mean "not set".
type QueueAttributes struct {
	DelaySeconds                  int
	MaximumMessageSize            int
	MessageRetentionPeriod        int
	ReceiveMessageWaitTimeSeconds int
	VisibilityTimeout             int
	Policy                        string
	RedrivePolicy                 string
	RedriveAllowPolicy            string
	KmsMasterKeyID                string
	KmsDataKeyReusePeriodSeconds  int
	SqsManagedSseEnabled          bool
	FifoQueue                     bool
	ContentBasedDeduplication     bool
	DeduplicationScope            string
	FifoThroughputLimit           string
}

// DefaultQueueAttributes are the attributes of a new queue before the
// CreateQueue request's own (docs/sqs-behaviour.md §3).
func DefaultQueueAttributes() QueueAttributes {
	return QueueAttributes{
		MaximumMessageSize:           MaxMessageSize,
		MessageRetentionPeriod:       345600,
		VisibilityTimeout:            30,
		KmsDataKeyReusePeriodSeconds: 300,
		SqsManagedSseEnabled:         true,
	}
}

// Limits of SQS (docs/sqs-behaviour.md §2, §3).
const (
	// MaxMessageSize is the largest message, body plus attributes, in bytes.
	MaxMessageSize = 1 << 20
	// MaxVisibilityTimeout is the longest lease, and the ceiling of a lease's
	// end measured from the receive that began it.
	MaxVisibilityTimeout = 43200
	// MaxWaitTimeSeconds is the longest long poll.
	MaxWaitTimeSeconds = 20
	// MaxDelaySeconds is the longest delay of a message.
	MaxDelaySeconds = 900
	// MaxBatchEntries is the most entries in a batch request.
	MaxBatchEntries = 10
	// MaxMessageAttributes is the most message attributes per message.
	MaxMessageAttributes = 10
)

// RenewalHeader is the HTTP header with which a consumer tells Baton why it
// changes a visibility timeout: RenewalProgress says the renewal is made
// because the handler reported progress, not by a heartbeat that renews
// whatever the handler does. Baton's consumer sends it; the lease doctor
// then reads a long-held lease as a long job, not a possibly hung one. SQS
// ignores headers it does not know.
const (
	RenewalHeader   = "X-Baton-Renewal"
	RenewalProgress = "progress"
)
