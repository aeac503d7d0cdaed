package proxy

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/protocol/awsjson"
	"github.com/baton-sqs/baton/protocol/awsquery"
	"github.com/baton-sqs/baton/protocol/wire"
)

// call is what the proxy needs of a request to follow leases: the action,
// its queue and its receipts. The rest of the request passes unread.
type call struct {
	action   string
	queueURL string
	// query: the request is the Query protocol's.
	query bool
	// visibility is a ReceiveMessage's VisibilityTimeout, or a
	// ChangeMessageVisibility's, if given.
	visibility *int
	// entries are the receipts of a delete or visibility change, one for
	// a single call, each batch entry's for a batch.
	entries []entry
	// attributes are a SetQueueAttributes's.
	attributes map[string]string
	// sent is when the proxy sent the call upstream.
	sent time.Time
}

type entry struct {
	id, handle string
	visibility *int
}

// ops declares the inputs the proxy decodes, with the codecs' own
// decoders; no handler is ever called.
var ops = protocol.NewTable(
	protocol.Op[wire.ReceiveMessageInput, protocol.NoOutput]("ReceiveMessage", nil),
	protocol.Op[wire.DeleteMessageInput, protocol.NoOutput]("DeleteMessage", nil),
	protocol.Op[wire.DeleteMessageBatchInput, protocol.NoOutput]("DeleteMessageBatch", nil),
	protocol.Op[wire.ChangeMessageVisibilityInput, protocol.NoOutput]("ChangeMessageVisibility", nil),
	protocol.Op[wire.ChangeMessageVisibilityBatchInput, protocol.NoOutput]("ChangeMessageVisibilityBatch", nil),
	protocol.Op[wire.SendMessageInput, protocol.NoOutput]("SendMessage", nil),
	protocol.Op[wire.SendMessageBatchInput, protocol.NoOutput]("SendMessageBatch", nil),
	protocol.Op[wire.SetQueueAttributesInput, protocol.NoOutput]("SetQueueAttributes", nil),
	protocol.Op[wire.PurgeQueueInput, protocol.NoOutput]("PurgeQueue", nil),
	protocol.Op[wire.DeleteQueueInput, protocol.NoOutput]("DeleteQueue", nil),
)

// parseCall decodes the request r, as the proxy forwards it (out), if it
// is one of the actions that bear on leases; nil otherwise, or if it does
// not decode (the upstream then answers its error).
func parseCall(r *http.Request, out *outgoing) *call {
	op, found := ops[out.action]
	if !found || (!out.json && out.formErr) {
		return nil
	}
	var (
		in  any
		err error
	)
	if out.json {
		in, err = awsjson.Decode(out.body, op)
	} else {
		in, err = awsquery.Decode(out.form, op)
	}
	if err != nil {
		return nil
	}
	c := &call{action: op.Name, query: !out.json}
	switch v := in.(type) {
	case *wire.ReceiveMessageInput:
		c.queueURL, c.visibility = v.QueueUrl, v.VisibilityTimeout
	case *wire.DeleteMessageInput:
		c.queueURL, c.entries = v.QueueUrl, []entry{{handle: v.ReceiptHandle}}
	case *wire.DeleteMessageBatchInput:
		c.queueURL = v.QueueUrl
		for _, e := range v.Entries {
			c.entries = append(c.entries, entry{id: e.Id, handle: e.ReceiptHandle})
		}
	case *wire.ChangeMessageVisibilityInput:
		c.queueURL, c.entries = v.QueueUrl, []entry{{handle: v.ReceiptHandle, visibility: v.VisibilityTimeout}}
	case *wire.ChangeMessageVisibilityBatchInput:
		c.queueURL = v.QueueUrl
		for _, e := range v.Entries {
			c.entries = append(c.entries, entry{id: e.Id, handle: e.ReceiptHandle, visibility: e.VisibilityTimeout})
		}
	case *wire.SendMessageInput:
		c.queueURL = v.QueueUrl
	case *wire.SendMessageBatchInput:
		c.queueURL = v.QueueUrl
	case *wire.SetQueueAttributesInput:
		c.queueURL, c.attributes = v.QueueUrl, v.Attributes
	case *wire.PurgeQueueInput:
		c.queueURL = v.QueueUrl
	case *wire.DeleteQueueInput:
		c.queueURL = v.QueueUrl
	}
	if c.queueURL == "" && c.query && strings.Count(r.URL.Path, "/") == 2 && !strings.HasSuffix(r.URL.Path, "/") {
		// The Query protocol's older form names the queue by the path
		// the request is sent to (/account-id/queue-name).
		c.queueURL = r.URL.Path
	}
	if c.queueURL == "" {
		return nil
	}
	return c
}

// received is a message a ReceiveMessage answer handed out.
type received struct {
	id, handle string
}

// answer is what the proxy reads of a successful answer: the messages
// received, and the ids of a batch's successful entries.
type answer struct {
	messages   []received
	successful map[string]bool
}

// parseAnswer reads an answer in any of the forms SQS answers in: the AWS
// JSON protocol's document, the Query protocol's XML, or the JSON that
// mirrors it (docs/sqs-behaviour.md §1.3).
func parseAnswer(contentType string, body []byte) answer {
	a := answer{successful: map[string]bool{}}
	mt, _, _ := mime.ParseMediaType(contentType)
	if strings.Contains(mt, "xml") || bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) {
		parseXML(body, &a)
		return a
	}
	var doc any
	if json.Unmarshal(body, &doc) == nil {
		walkJSON(doc, "", &a)
	}
	return a
}

// walkJSON collects the messages (objects with a MessageId and a
// ReceiptHandle) and the successful batch entries (the objects with an Id
// listed under Successful, or under a …ResultEntry of the Query form) of
// a JSON answer.
func walkJSON(v any, key string, a *answer) {
	switch v := v.(type) {
	case map[string]any:
		id, _ := v["MessageId"].(string)
		handle, _ := v["ReceiptHandle"].(string)
		if id != "" && handle != "" {
			a.messages = append(a.messages, received{id: id, handle: handle})
			return
		}
		if successKey(key) {
			if id, ok := v["Id"].(string); ok {
				a.successful[id] = true
				return
			}
		}
		for k, c := range v {
			walkJSON(c, k, a)
		}
	case []any:
		for _, c := range v {
			walkJSON(c, key, a)
		}
	}
}

// successKey says whether an answer's member named key lists a batch's
// successful entries.
func successKey(key string) bool {
	return key == "Successful" || strings.HasSuffix(key, "ResultEntry") && key != "BatchResultErrorEntry"
}

// parseXML reads a Query answer's messages and successful batch entries.
func parseXML(body []byte, a *answer) {
	d := xml.NewDecoder(bytes.NewReader(body))
	var (
		stack []string
		text  strings.Builder
		msg   received
	)
	for {
		tok, err := d.Token()
		if err != nil {
			return
		}
		switch t := tok.(type) {
		case xml.StartElement:
			stack = append(stack, t.Name.Local)
			text.Reset()
			if t.Name.Local == "Message" {
				msg = received{}
			}
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			parent := ""
			if len(stack) >= 2 {
				parent = stack[len(stack)-2]
			}
			switch {
			case t.Name.Local == "MessageId" && parent == "Message":
				msg.id = text.String()
			case t.Name.Local == "ReceiptHandle" && parent == "Message":
				msg.handle = text.String()
			case t.Name.Local == "Message" && msg.id != "" && msg.handle != "":
				a.messages = append(a.messages, msg)
			case t.Name.Local == "Id" && successKey(parent):
				a.successful[text.String()] = true
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			text.Reset()
		}
	}
}

// errorCode returns the SQS error code of an error answer: the
// x-amzn-query-error header's, else the body's.
func errorCode(h http.Header, body []byte) string {
	if q := h.Get("x-amzn-query-error"); q != "" {
		code, _, _ := strings.Cut(q, ";")
		return code
	}
	var j struct {
		Type  string `json:"__type"`
		Error struct{ Code string }
	}
	if json.Unmarshal(body, &j) == nil {
		if j.Error.Code != "" {
			return j.Error.Code
		}
		return j.Type[strings.LastIndexByte(j.Type, '#')+1:]
	}
	var x struct {
		Code string `xml:"Error>Code"`
	}
	xml.Unmarshal(body, &x)
	return x.Code
}

func newRequestID() string { return ids.NewUUID() }
