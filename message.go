package baton

import "time"

// Message is one message and the state of its current lease.
//
// A message is visible when VisibleAt is not after now; otherwise it is in
// flight if Leased (a receive hid it) and delayed if not.
type Message struct {
	ID   string
	Body string
	// BodyMD5 is the hex MD5 digest of Body, computed once by the send
	// that stored it. Empty when a store does not have it (a message kept
	// from before the store recorded it): then a receive computes it.
	BodyMD5    string
	Attributes map[string]MessageAttribute
	// TraceHeader is the AWSTraceHeader system attribute, if sent.
	TraceHeader string
	// GroupID is the MessageGroupId (FIFO groups, or fair-queue tenants).
	GroupID        string
	DedupID        string
	SequenceNumber string
	SenderID       string
	SentAt         time.Time
	// DeadLetterSourceARN is the queue a dead-letter move took it from.
	DeadLetterSourceARN string

	VisibleAt       time.Time
	Leased          bool
	ReceiveCount    int
	FirstReceivedAt time.Time
	// Epoch numbers the leases of this message: each receive starts a new
	// one. A receipt handle names the epoch it was issued for.
	Epoch uint32
	// LeasedAt is when the current lease began (its receive).
	LeasedAt time.Time
}

// MessageAttribute is one user message attribute. DataType is String,
// Number or Binary, optionally followed by "." and a custom label.
type MessageAttribute struct {
	DataType    string
	StringValue string
	BinaryValue []byte
}

// IsBinary reports whether the attribute carries binary data.
func (a MessageAttribute) IsBinary() bool {
	return len(a.DataType) >= 6 && a.DataType[:6] == "Binary"
}

// Size is the attribute's contribution to the message size limit: its name,
// data type and value bytes.
func (a MessageAttribute) Size(name string) int {
	return len(name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
}
