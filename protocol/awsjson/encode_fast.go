package awsjson

import (
	"slices"
	"unicode/utf8"

	"github.com/baton-sqs/baton/protocol/wire"
)

// The fast encoder writes the answers sent most — a send, a send batch, a
// receive whose messages carry no message attributes, a delete batch —
// byte for byte as encoding/json writes them with HTML escaping off, without
// reflection. Anything else it leaves to encoding/json. The differential
// fuzz test (FuzzFastEncode) holds it to that.

// fastEncode appends the JSON of out to dst, or reports false if out is a
// value it leaves to encoding/json.
func fastEncode(dst []byte, out any) ([]byte, bool) {
	switch o := out.(type) {
	case *wire.SendMessageOutput:
		return appendSendResult(dst, o), true
	case *wire.SendMessageBatchOutput:
		return appendSendBatchResult(dst, o), true
	case *wire.ReceiveMessageOutput:
		for i := range o.Messages {
			if len(o.Messages[i].MessageAttributes) > 0 {
				return dst, false
			}
		}
		return appendReceiveResult(dst, o), true
	case *wire.DeleteMessageBatchOutput:
		return appendDeleteBatchResult(dst, o), true
	}
	return dst, false
}

// object writes the members of one JSON object, each after a comma but the
// first.
type object struct {
	dst  []byte
	some bool
}

func (o *object) key(name string) {
	if o.some {
		o.dst = append(o.dst, ',')
	}
	o.some = true
	o.dst = append(o.dst, '"')
	o.dst = append(o.dst, name...)
	o.dst = append(o.dst, '"', ':')
}

func (o *object) str(name, value string) {
	o.key(name)
	o.dst = appendString(o.dst, value)
}

// strOmit writes a member tagged omitempty: not at all when empty.
func (o *object) strOmit(name, value string) {
	if value != "" {
		o.str(name, value)
	}
}

func appendSendResult(dst []byte, r *wire.SendMessageOutput) []byte {
	o := object{dst: append(dst, '{')}
	o.strOmit("MD5OfMessageBody", r.MD5OfMessageBody)
	o.strOmit("MD5OfMessageAttributes", r.MD5OfMessageAttributes)
	o.strOmit("MD5OfMessageSystemAttributes", r.MD5OfMessageSystemAttributes)
	o.strOmit("MessageId", r.MessageId)
	o.strOmit("SequenceNumber", r.SequenceNumber)
	return append(o.dst, '}')
}

func appendSendBatchResult(dst []byte, r *wire.SendMessageBatchOutput) []byte {
	o := object{dst: append(dst, '{')}
	appendObjects(&o, "Successful", r.Successful, func(eo object, e *wire.SendMessageBatchResultEntry) object {
		eo.str("Id", e.Id)
		eo.str("MessageId", e.MessageId)
		eo.str("MD5OfMessageBody", e.MD5OfMessageBody)
		eo.strOmit("MD5OfMessageAttributes", e.MD5OfMessageAttributes)
		eo.strOmit("MD5OfMessageSystemAttributes", e.MD5OfMessageSystemAttributes)
		eo.strOmit("SequenceNumber", e.SequenceNumber)
		return eo
	})
	appendFailed(&o, r.Failed)
	return append(o.dst, '}')
}

func appendDeleteBatchResult(dst []byte, r *wire.DeleteMessageBatchOutput) []byte {
	o := object{dst: append(dst, '{')}
	appendObjects(&o, "Successful", r.Successful, func(eo object, e *wire.BatchResultEntry) object {
		eo.str("Id", e.Id)
		return eo
	})
	appendFailed(&o, r.Failed)
	return append(o.dst, '}')
}

// appendFailed writes a batch answer's Failed member, if it has entries.
func appendFailed(o *object, failed []wire.BatchResultErrorEntry) {
	appendObjects(o, "Failed", failed, func(eo object, e *wire.BatchResultErrorEntry) object {
		eo.str("Id", e.Id)
		eo.key("SenderFault")
		if e.SenderFault {
			eo.dst = append(eo.dst, "true"...)
		} else {
			eo.dst = append(eo.dst, "false"...)
		}
		eo.str("Code", e.Code)
		eo.strOmit("Message", e.Message)
		return eo
	})
}

func appendReceiveResult(dst []byte, r *wire.ReceiveMessageOutput) []byte {
	o := object{dst: append(dst, '{')}
	appendObjects(&o, "Messages", r.Messages, func(mo object, m *wire.Message) object {
		mo.str("MessageId", m.MessageId)
		mo.str("ReceiptHandle", m.ReceiptHandle)
		mo.str("MD5OfBody", m.MD5OfBody)
		mo.str("Body", m.Body)
		if len(m.Attributes) > 0 {
			mo.key("Attributes")
			var names [16]string // a receive asks for a handful of attributes
			keys := names[:0]
			for k := range m.Attributes {
				keys = append(keys, k)
			}
			slices.Sort(keys) // encoding/json writes a map in key order
			mo.dst = append(mo.dst, '{')
			for n, k := range keys {
				if n > 0 {
					mo.dst = append(mo.dst, ',')
				}
				mo.dst = appendString(mo.dst, k)
				mo.dst = append(mo.dst, ':')
				mo.dst = appendString(mo.dst, m.Attributes[k])
			}
			mo.dst = append(mo.dst, '}')
		}
		mo.strOmit("MD5OfMessageAttributes", m.MD5OfMessageAttributes)
		return mo
	})
	return append(o.dst, '}')
}

// appendObjects writes member name, an array of one object per item whose
// members each writes, unless items is empty (the members are omitempty).
// The objects pass by value: a pointer into an unknown function would move
// each to the heap.
func appendObjects[T any](o *object, name string, items []T, each func(object, *T) object) {
	if len(items) == 0 {
		return
	}
	o.key(name)
	o.dst = append(o.dst, '[')
	for i := range items {
		if i > 0 {
			o.dst = append(o.dst, ',')
		}
		eo := each(object{dst: append(o.dst, '{')}, &items[i])
		o.dst = append(eo.dst, '}')
	}
	o.dst = append(o.dst, ']')
}

// appendString appends s as a JSON string as encoding/json writes it with
// HTML escaping off: '"', '\\' and control characters escaped (\b, \f,
// \n, \r, \t by name, the others as \u00XX), each byte of invalid UTF-8 as
// \ufffd, and U+2028 and U+2029 as \u2028 and \u2029.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plain8(s, i) {
			i += 8
			continue
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plain8 reports whether the eight bytes of s at i are all ASCII that a
// JSON string holds as it is: none below 0x20, none '"' or '\\', none
// 0x80 or above. Each test sets a byte's high bit where the byte is one it
// looks for (and perhaps in bytes above such a byte, which makes no
// difference to whether there is one).
func plain8(s string, i int) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	below := (x - 0x20*ones) &^ x
	q := x ^ '"'*ones // a zero byte where x has '"'
	b := x ^ '\\'*ones
	quote := (q - ones) &^ q
	backslash := (b - ones) &^ b
	return (below|quote|backslash|x)&highs == 0
}
