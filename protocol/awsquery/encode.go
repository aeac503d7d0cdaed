package awsquery

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"reflect"
	"sort"
	"strconv"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/bufpool"
	"github.com/baton-sqs/baton/protocol"
)

// Namespace is the XML namespace of every response.
const Namespace = "http://queue.amazonaws.com/doc/2012-11-05/"

// WriteResult writes <OpResponse><OpResult>…</OpResult><ResponseMetadata>.
// Operations without output omit the Result element; a Result without
// members is written self-closed, <OpResult/>, as SQS writes it (an empty
// ReceiveMessage or ListQueues).
func WriteResult(w http.ResponseWriter, op protocol.Operation, out any, requestID string) {
	writeResult(w, Namespace, op, out, requestID)
}

func writeResult(w http.ResponseWriter, namespace string, op protocol.Operation, out any, requestID string) {
	b := bufpool.Get()
	defer bufpool.Put(b)
	b.WriteString(`<?xml version="1.0"?><`)
	b.WriteString(op.Name)
	b.WriteString(`Response xmlns="`)
	b.WriteString(namespace)
	b.WriteString(`">`)
	if op.HasOutput {
		open := b.Len()
		openTag(b, op.Name+"Result")
		empty := b.Len()
		if out != nil {
			writeStruct(b, reflect.ValueOf(out).Elem())
		}
		if b.Len() == empty {
			b.Truncate(open)
			b.WriteString("<" + op.Name + "Result/>")
		} else {
			closeTag(b, op.Name+"Result")
		}
	}
	b.WriteString("<ResponseMetadata><RequestId>")
	b.WriteString(requestID)
	b.WriteString("</RequestId></ResponseMetadata></")
	b.WriteString(op.Name)
	b.WriteString("Response>")
	// Content-Length, as the JSON protocol's (awsjson.WriteResult says
	// why): not chunked, and an answer cut short is an error to its client.
	h := w.Header()
	h["Content-Type"] = xmlContentType
	h["Content-Length"] = []string{strconv.Itoa(b.Len())}
	w.WriteHeader(http.StatusOK)
	w.Write(b.Bytes())
}

var xmlContentType = []string{"text/xml"}

// WriteError writes an <ErrorResponse> with the error's Query code.
func WriteError(w http.ResponseWriter, e *baton.Error, requestID string) {
	spec, fault, msg := queryFault(e)
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0"?><ErrorResponse xmlns="` + Namespace + `"><Error><Type>` + fault + `</Type><Code>`)
	escape(&b, spec.QueryCode)
	b.WriteString("</Code><Message>")
	escape(&b, msg)
	b.WriteString("</Message><Detail/></Error><RequestId>" + requestID + "</RequestId></ErrorResponse>")
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-query-error", spec.QueryCode+";"+fault)
	w.WriteHeader(spec.Status)
	w.Write(b.Bytes())
}

// queryFault is what a Query error says in either form, XML or JSON: the
// code's wire spec, whose fault it is ("Sender" or "Receiver") and the
// message, in AWS's Query wording where that differs from the API's.
func queryFault(e *baton.Error) (spec baton.ErrorSpec, fault, msg string) {
	spec = e.Code.Spec()
	fault = "Sender"
	if spec.Receiver {
		fault = "Receiver"
	}
	msg = e.Message
	if spec.QueryMessage != "" {
		msg = spec.QueryMessage
	}
	return spec, fault, msg
}

func writeStruct(b *bytes.Buffer, v reflect.Value) {
	for i, fd := range fieldsOf(v.Type()) {
		writeValue(b, v.Field(i), fd)
	}
}

// writeValue writes one member: scalars once, lists and maps flattened as
// repeated elements.
func writeValue(b *bytes.Buffer, v reflect.Value, fd field) {
	switch v.Kind() {
	case reflect.String:
		if v.Len() > 0 {
			element(b, fd.name, v.String())
		}
	case reflect.Bool:
		element(b, fd.name, strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int64:
		element(b, fd.name, strconv.FormatInt(v.Int(), 10))
	case reflect.Pointer:
		if !v.IsNil() {
			element(b, fd.name, strconv.FormatInt(v.Elem().Int(), 10))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.Len() > 0 {
				element(b, fd.name, base64.StdEncoding.EncodeToString(v.Bytes()))
			}
			return
		}
		for i := 0; i < v.Len(); i++ {
			writeValue(b, v.Index(i), field{name: fd.name})
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			openTag(b, fd.name)
			element(b, fd.key, k.String())
			// A map entry always has its value element, even an empty
			// string (a tag value may be ""): parsers pair Key with Value.
			if mv := v.MapIndex(k); mv.Kind() == reflect.String {
				element(b, fd.val, mv.String())
			} else {
				writeValue(b, mv, field{name: fd.val})
			}
			closeTag(b, fd.name)
		}
	case reflect.Struct:
		openTag(b, fd.name)
		writeStruct(b, v)
		closeTag(b, fd.name)
	}
}

func element(b *bytes.Buffer, name, text string) {
	openTag(b, name)
	escape(b, text)
	closeTag(b, name)
}

func openTag(b *bytes.Buffer, name string) {
	b.WriteByte('<')
	b.WriteString(name)
	b.WriteByte('>')
}

func closeTag(b *bytes.Buffer, name string) {
	b.WriteString("</")
	b.WriteString(name)
	b.WriteByte('>')
}

// escape writes text as SQS does: &, <, >, " and CR escaped.
func escape(b *bytes.Buffer, s string) {
	last := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&quot;"
		case '\r':
			esc = "&#xD;"
		default:
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(esc)
		last = i + 1
	}
	b.WriteString(s[last:])
}
