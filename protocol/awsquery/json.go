package awsquery

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/protocol/wire"
)

// SQS answers a Query request in JSON instead of XML when the request
// accepts application/json ahead of XML, as API Gateway's SQS integrations
// do. That JSON is not the AWS JSON protocol's: it mirrors the XML document.
// A success is
//
//	{"SendMessageResponse":{"ResponseMetadata":{"RequestId":"…"},
//	 "SendMessageResult":{"MD5OfMessageAttributes":null,"MD5OfMessageBody":"…",
//	 "MD5OfMessageSystemAttributes":null,"MessageId":"…","SequenceNumber":null}}}
//
// with every member of the result present, null when absent, and the
// members of each object in byte order of their names; an action without
// output has no Result member. A few lists take lower-case names there
// (ListQueues' queueUrls, ReceiveMessage's messages: the `queryjson` tags
// of protocol/wire), and ListQueues carries a NextExclusiveStartQueueName
// that is always null. An error is
//
//	{"Error":{"Code":"AccessDenied","Message":"…","Type":"Sender"},"RequestId":"…"}
//
// Both are sent as application/json with the Query protocol's status
// (docs/sqs-behaviour.md §1.3).

// WantsJSON reports whether r, a Query request, asks for a JSON answer: its
// Accept header names application/json with a quality above 0, and no XML
// type (text/xml, application/xml) with a higher one, or an equal one
// listed earlier. Wildcards do not count: */* alone gets XML.
func WantsJSON(r *http.Request) bool {
	// The best quality of each kind, and the position of the entry that
	// first gave it.
	jsonQ, xmlQ := 0.0, 0.0
	jsonAt, xmlAt := -1, -1
	pos := 0
	for _, h := range r.Header.Values("Accept") {
		for _, part := range strings.Split(h, ",") {
			pos++
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(s, 64); err != nil || q < 0 || q > 1 {
					continue
				}
			}
			switch mt {
			case "application/json":
				if q > jsonQ {
					jsonQ, jsonAt = q, pos
				}
			case "text/xml", "application/xml":
				if q > xmlQ {
					xmlQ, xmlAt = q, pos
				}
			}
		}
	}
	return jsonQ > 0 && (jsonQ > xmlQ || jsonQ == xmlQ && jsonAt < xmlAt)
}

// WriteResultJSON writes the JSON form of a Query success (see WantsJSON).
func WriteResultJSON(w http.ResponseWriter, op protocol.Operation, out any, requestID string) {
	response := map[string]any{"ResponseMetadata": map[string]any{"RequestId": requestID}}
	if op.HasOutput {
		result := map[string]any{}
		if out != nil {
			result = jsonStruct(reflect.ValueOf(out).Elem())
		}
		response[op.Name+"Result"] = result
	}
	writeJSON(w, http.StatusOK, map[string]any{op.Name + "Response": response})
}

// WriteErrorJSON writes the JSON form of a Query error (see WantsJSON).
func WriteErrorJSON(w http.ResponseWriter, e *baton.Error, requestID string) {
	spec, fault, msg := queryFault(e)
	w.Header().Set("x-amzn-query-error", spec.QueryCode+";"+fault)
	writeJSON(w, spec.Status, map[string]any{
		"Error":     map[string]any{"Code": spec.QueryCode, "Message": msg, "Type": fault},
		"RequestId": requestID,
	})
}

func writeJSON(w http.ResponseWriter, status int, doc map[string]any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// The document holds only strings, numbers, booleans, nil, slices and
	// maps with string keys: encoding cannot fail.
	enc.Encode(doc)
	body := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// alwaysNull lists members SQS writes, always null, beyond those of
// protocol/wire's structs.
var alwaysNull = map[reflect.Type][]string{
	reflect.TypeFor[wire.ListQueuesOutput](): {"NextExclusiveStartQueueName"},
}

// jsonStruct is a struct as a JSON object with every member, encoding/json
// writing a map's keys in byte order.
func jsonStruct(v reflect.Value) map[string]any {
	t := v.Type()
	m := make(map[string]any, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		m[jsonName(t.Field(i))] = jsonValue(v.Field(i))
	}
	for _, name := range alwaysNull[t] {
		m[name] = nil
	}
	return m
}

// jsonName is a member's name in the JSON form: its `queryjson` tag, else
// its AWS JSON protocol name.
func jsonName(f reflect.StructField) string {
	if name := f.Tag.Get("queryjson"); name != "" {
		return name
	}
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" {
		return name
	}
	return f.Name
}

// jsonValue is a member's value in the JSON form: nil (null) for an absent
// one (an empty string, list or map, a nil pointer).
func jsonValue(v reflect.Value) any {
	switch v.Kind() {
	case reflect.String:
		if v.Len() == 0 {
			return nil
		}
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int64:
		return v.Int()
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return jsonValue(v.Elem())
	case reflect.Slice:
		if v.Len() == 0 {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return base64.StdEncoding.EncodeToString(v.Bytes())
		}
		l := make([]any, v.Len())
		for i := range l {
			l[i] = jsonValue(v.Index(i))
		}
		return l
	case reflect.Map:
		if v.Len() == 0 {
			return nil
		}
		m := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			if mv := it.Value(); mv.Kind() == reflect.String {
				m[it.Key().String()] = mv.String() // a map value is kept, even ""
			} else {
				m[it.Key().String()] = jsonValue(mv)
			}
		}
		return m
	case reflect.Struct:
		return jsonStruct(v)
	}
	return nil
}
