package sns

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"time"
)

// notification is what an SNS envelope of type Notification says.
type notification struct {
	MessageID      string
	SequenceNumber string // FIFO topics only
	TopicARN       string
	Subject        *string
	Message        string
	Timestamp      time.Time
	UnsubscribeURL string
	Attributes     []MessageAttribute
	// SignatureVersion, Signature and SigningCertURL are set on a
	// standard topic's notifications.
	SignatureVersion, Signature, SigningCertURL string
}

// timestampLayout is the envelope's Timestamp: UTC, in milliseconds.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// envelope writes the notification as AWS lays it out, byte for byte (an
// SQS message's body from AWS, checked by its MD5): indented by two
// spaces, `"Key" : value`, one member a line in AWS's order, those absent
// left out, no final newline; attributes compact, in publish order.
func envelope(n notification) []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	member(&b, "Type", "Notification", true)
	member(&b, "MessageId", n.MessageID, true)
	if n.SequenceNumber != "" {
		member(&b, "SequenceNumber", n.SequenceNumber, true)
	}
	member(&b, "TopicArn", n.TopicARN, true)
	if n.Subject != nil {
		member(&b, "Subject", *n.Subject, true)
	}
	member(&b, "Message", n.Message, true)
	member(&b, "Timestamp", n.Timestamp.UTC().Format(timestampLayout), true)
	if n.Signature != "" {
		member(&b, "SignatureVersion", n.SignatureVersion, true)
		member(&b, "Signature", n.Signature, true)
		member(&b, "SigningCertURL", n.SigningCertURL, true)
	}
	member(&b, "UnsubscribeURL", n.UnsubscribeURL, len(n.Attributes) > 0)
	if len(n.Attributes) > 0 {
		b.WriteString(`  "MessageAttributes" : {` + "\n")
		for i, a := range n.Attributes {
			b.WriteString("    ")
			writeString(&b, a.Name)
			b.WriteString(` : {"Type":`)
			writeString(&b, a.DataType)
			b.WriteString(`,"Value":`)
			v := a.StringValue
			if a.IsBinary() {
				v = base64.StdEncoding.EncodeToString(a.BinaryValue)
			}
			writeString(&b, v)
			b.WriteString("}")
			if i < len(n.Attributes)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}")
	return b.Bytes()
}

// member writes one `  "name" : "value"` line, with a comma unless last.
func member(b *bytes.Buffer, name, value string, more bool) {
	b.WriteString(`  "` + name + `" : `)
	writeString(b, value)
	if more {
		b.WriteString(",")
	}
	b.WriteString("\n")
}

// writeString writes s as a JSON string: quotes, backslashes and control
// characters escaped, '/' and <, > and & as they are.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)           // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}
