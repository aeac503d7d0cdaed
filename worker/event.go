package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// record is one message of an event, with Lambda's field names. It is the
// worker's wire format towards targets, so it carries JSON tags.
type record struct {
	MessageID              string                    `json:"messageId"`
	ReceiptHandle          string                    `json:"receiptHandle"`
	Body                   string                    `json:"body"`
	Attributes             map[string]string         `json:"attributes"`
	MessageAttributes      map[string]eventAttribute `json:"messageAttributes"`
	MD5OfBody              string                    `json:"md5OfBody"`
	MD5OfMessageAttributes string                    `json:"md5OfMessageAttributes,omitempty"`
	EventSource            string                    `json:"eventSource"`
	EventSourceARN         string                    `json:"eventSourceARN"`
	AWSRegion              string                    `json:"awsRegion"`
}

// eventAttribute is a message attribute as Lambda spells it: lower-camel
// keys, both list fields always present, binary values base64.
type eventAttribute struct {
	StringValue      *string  `json:"stringValue,omitempty"`
	BinaryValue      []byte   `json:"binaryValue,omitempty"`
	StringListValues []string `json:"stringListValues"`
	BinaryListValues [][]byte `json:"binaryListValues"`
	DataType         string   `json:"dataType"`
}

// eventSource is every record's eventSource.
const eventSource = "aws:sqs"

// eventPrefix and eventSuffix wrap the records; eventOverhead is an empty
// event's size.
const (
	eventPrefix   = `{"Records":[`
	eventSuffix   = `]}`
	eventOverhead = len(eventPrefix) + len(eventSuffix)
)

// encodeRecord renders m as one record of an event from the queue arn in
// region.
func encodeRecord(m types.Message, arn, region string) ([]byte, error) {
	r := record{
		MessageID:         deref(m.MessageId),
		ReceiptHandle:     deref(m.ReceiptHandle),
		Body:              deref(m.Body),
		Attributes:        map[string]string{},
		MessageAttributes: map[string]eventAttribute{},
		MD5OfBody:         deref(m.MD5OfBody),
		EventSource:       eventSource,
		EventSourceARN:    arn,
		AWSRegion:         region,
	}
	for k, v := range m.Attributes {
		r.Attributes[k] = v
	}
	for k, v := range m.MessageAttributes {
		a := eventAttribute{
			StringValue:      v.StringValue,
			BinaryValue:      v.BinaryValue,
			StringListValues: v.StringListValues,
			BinaryListValues: v.BinaryListValues,
			DataType:         deref(v.DataType),
		}
		if a.StringListValues == nil {
			a.StringListValues = []string{}
		}
		if a.BinaryListValues == nil {
			a.BinaryListValues = [][]byte{}
		}
		r.MessageAttributes[k] = a
	}
	if len(m.MessageAttributes) > 0 {
		r.MD5OfMessageAttributes = deref(m.MD5OfMessageAttributes)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("worker: encode message %s: %w", r.MessageID, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encodeEvent joins encoded records into an event.
func encodeEvent(recs [][]byte) []byte {
	n := eventOverhead
	for i, r := range recs {
		if i > 0 {
			n++
		}
		n += len(r)
	}
	out := make([]byte, 0, n)
	out = append(out, eventPrefix...)
	for i, r := range recs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return append(out, eventSuffix...)
}

// regionOf returns the region of a queue ARN (arn:aws:sqs:REGION:ACCOUNT:NAME),
// or "".
func regionOf(arn string) string {
	p := strings.Split(arn, ":")
	if len(p) != 6 || p[0] != "arn" {
		return ""
	}
	return p[3]
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
