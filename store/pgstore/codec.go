package pgstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/baton-sqs/baton"
)

// How Go values are kept in the database: attributes and tags as JSON
// objects whose keys are spelled here (so that renaming a Go field cannot
// silently orphan stored data), queue ids as the bigint with the same bits,
// zero times as NULL.

// queueAttributes is baton.QueueAttributes as stored.
type queueAttributes struct {
	DelaySeconds                  int    `json:"delay_seconds"`
	MaximumMessageSize            int    `json:"maximum_message_size"`
	MessageRetentionPeriod        int    `json:"message_retention_period"`
	ReceiveMessageWaitTimeSeconds int    `json:"receive_message_wait_time_seconds"`
	VisibilityTimeout             int    `json:"visibility_timeout"`
	Policy                        string `json:"policy,omitempty"`
	RedrivePolicy                 string `json:"redrive_policy,omitempty"`
	RedriveAllowPolicy            string `json:"redrive_allow_policy,omitempty"`
	KmsMasterKeyID                string `json:"kms_master_key_id,omitempty"`
	KmsDataKeyReusePeriodSeconds  int    `json:"kms_data_key_reuse_period_seconds"`
	SqsManagedSseEnabled          bool   `json:"sqs_managed_sse_enabled"`
	FifoQueue                     bool   `json:"fifo_queue"`
	ContentBasedDeduplication     bool   `json:"content_based_deduplication"`
	DeduplicationScope            string `json:"deduplication_scope,omitempty"`
	FifoThroughputLimit           string `json:"fifo_throughput_limit,omitempty"`
}

func encodeQueueAttributes(a baton.QueueAttributes) []byte {
	b, _ := json.Marshal(queueAttributes(a)) // plain fields: cannot fail
	return b
}

// queueAttributeCache remembers how stored queue attributes decode: every
// request reads its queue's row (QueueGet), and the attributes it finds
// are nearly always ones met before. Keyed by the stored JSON itself, an
// entry can never be stale; the cache is emptied when it is full.
var queueAttributeCache struct {
	mu sync.Mutex
	m  map[string]baton.QueueAttributes
}

// queueAttributeCacheSize bounds the distinct attribute sets remembered.
const queueAttributeCacheSize = 1024

// decodeQueueAttributesCached is decodeQueueAttributes, remembered.
func decodeQueueAttributesCached(b []byte) (baton.QueueAttributes, error) {
	c := &queueAttributeCache
	c.mu.Lock()
	a, ok := c.m[string(b)]
	c.mu.Unlock()
	if ok {
		return a, nil
	}
	a, err := decodeQueueAttributes(b)
	if err != nil {
		return a, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= queueAttributeCacheSize {
		c.m = make(map[string]baton.QueueAttributes)
	}
	c.m[string(b)] = a
	c.mu.Unlock()
	return a, nil
}

func decodeQueueAttributes(b []byte) (baton.QueueAttributes, error) {
	var a queueAttributes
	if err := json.Unmarshal(b, &a); err != nil {
		return baton.QueueAttributes{}, fmt.Errorf("queue attributes: %w", err)
	}
	return baton.QueueAttributes(a), nil
}

func encodeTags(tags map[string]string) []byte {
	if tags == nil {
		tags = map[string]string{}
	}
	b, _ := json.Marshal(tags)
	return b
}

// decodeTags decodes stored tags; the usual "{}" is a new empty map
// without a trip through the JSON decoder.
func decodeTags(b []byte) (map[string]string, error) {
	if string(b) == "{}" {
		return map[string]string{}, nil
	}
	var tags map[string]string
	if err := json.Unmarshal(b, &tags); err != nil {
		return nil, fmt.Errorf("queue tags: %w", err)
	}
	return tags, nil
}

// messageAttribute is baton.MessageAttribute as stored; binary values are
// base64 in JSON.
type messageAttribute struct {
	DataType    string `json:"t"`
	StringValue string `json:"s,omitempty"`
	BinaryValue []byte `json:"b,omitempty"`
}

// encodeMessageAttributes returns nil (NULL) for no attributes.
func encodeMessageAttributes(attrs map[string]baton.MessageAttribute) []byte {
	if len(attrs) == 0 {
		return nil
	}
	m := make(map[string]messageAttribute, len(attrs))
	for name, a := range attrs {
		m[name] = messageAttribute(a)
	}
	b, _ := json.Marshal(m)
	return b
}

func decodeMessageAttributes(b []byte) (map[string]baton.MessageAttribute, error) {
	if b == nil {
		return nil, nil
	}
	var m map[string]messageAttribute
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("message attributes: %w", err)
	}
	attrs := make(map[string]baton.MessageAttribute, len(m))
	for name, a := range m {
		attrs[name] = baton.MessageAttribute(a)
	}
	return attrs, nil
}

// nullTime is t, or NULL for the zero time.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// nullTimeOf is t's time, or the zero time for NULL. Rows scan a NULL-able
// time into a pgtype.Timestamptz, which, unlike a *time.Time, costs the
// scan no allocation.
func nullTimeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time
}

// timeOf is *t, or the zero time for NULL.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// formatSeq renders a FIFO sequence number as SQS does: a 20-digit decimal
// (fixed width, so that text order is numeric order).
func formatSeq(n int64) string { return fmt.Sprintf("%020d", seqBase+uint64(n)) }

// seqBase makes sequence numbers look like SQS's.
const seqBase = 10000000000000000000

// queueColumns are selected from baton_queues q, in scanQueue's order.
const queueColumns = `q.id, q.region, q.account, q.name, q.attributes, q.tags, q.created_at, q.modified_at, q.purged_at, q.dedup_scope`

func scanQueue(row pgx.Row) (*baton.Queue, error) {
	var (
		q            baton.Queue
		id           int64
		attrs, tags  []byte
		purgedAt     *time.Time
		created, mod time.Time
	)
	if err := row.Scan(&id, &q.Region, &q.Account, &q.Name, &attrs, &tags, &created, &mod, &purgedAt, &q.DedupScope); err != nil {
		return nil, err
	}
	var err error
	if q.Attributes, err = decodeQueueAttributesCached(attrs); err != nil {
		return nil, err
	}
	if q.Tags, err = decodeTags(tags); err != nil {
		return nil, err
	}
	q.ID, q.CreatedAt, q.ModifiedAt, q.PurgedAt = uint64(id), created, mod, timeOf(purgedAt)
	return &q, nil
}

// leaseStateColumns are a message's columns but its payload, selected
// from baton_messages m, in scanLeaseState's order.
const leaseStateColumns = `m.id, m.group_id, m.dedup_id, m.sequence_number,
	m.sender_id, m.sent_at, m.dead_letter_source_arn, m.visible_at, m.leased, m.receive_count,
	m.first_received_at, m.epoch, m.leased_at`

// messageColumns are all of a message's columns, its lease state and then
// its payload (body, attributes, trace header, body MD5), in scanMessage's
// order.
const messageColumns = leaseStateColumns + `, m.body, m.attributes, m.trace_header, m.body_md5`

// messageShape is which of a message's columns a statement selects, and
// how to scan them.
type messageShape struct {
	columns string // from baton_messages m
	scan    func(row pgx.Row, extra ...any) (*baton.Message, error)
}

// The shapes: a whole message, or its state without the payload.
var (
	fullMessage = messageShape{messageColumns, scanMessage}
	leaseState  = messageShape{leaseStateColumns, scanLeaseState}
)

// selected are the shape's columns as a CTE that selected them names them.
func (sh messageShape) selected() string { return strings.ReplaceAll(sh.columns, "m.", "") }

// scanMessage scans messageColumns, then extra.
func scanMessage(row pgx.Row, extra ...any) (*baton.Message, error) {
	return scanColumns(row, true, extra)
}

// scanLeaseState scans leaseStateColumns, then extra: a message without
// its payload.
func scanLeaseState(row pgx.Row, extra ...any) (*baton.Message, error) {
	return scanColumns(row, false, extra)
}

// scanColumns scans leaseStateColumns, the payload's if payload (as
// messageColumns has them), then extra.
func scanColumns(row pgx.Row, payload bool, extra []any) (*baton.Message, error) {
	var (
		m                   baton.Message
		attrs               []byte
		firstRecv, leasedAt pgtype.Timestamptz
		epoch               int64
	)
	dest := make([]any, 0, 17+len(extra))
	dest = append(dest, &m.ID, &m.GroupID, &m.DedupID, &m.SequenceNumber,
		&m.SenderID, &m.SentAt, &m.DeadLetterSourceARN, &m.VisibleAt, &m.Leased, &m.ReceiveCount,
		&firstRecv, &epoch, &leasedAt)
	if payload {
		dest = append(dest, &m.Body, &attrs, &m.TraceHeader, &m.BodyMD5)
	}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	if payload {
		var err error
		if m.Attributes, err = decodeMessageAttributes(attrs); err != nil {
			return nil, err
		}
	}
	m.FirstReceivedAt, m.LeasedAt, m.Epoch = nullTimeOf(firstRecv), nullTimeOf(leasedAt), uint32(epoch)
	return &m, nil
}
