package bench

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/baton-sqs/baton/protocol/wire"
)

// Echo is the ceiling a server is measured against: an HTTP handler that
// reads a JSON 1.0 request, decodes it into the action's request struct
// with encoding/json, and encodes a response of the action's shape (the
// same protocol/wire structs Baton answers with) filled with constants. It
// keeps no state and checks nothing; whatever a real server does beyond
// that is what the ratio to Echo measures. It is deliberately not Baton's
// codec, so that speeding up the codec shows in the ratio.
type Echo struct {
	// message is what every received message looks like.
	message wire.Message
}

// Constants of Echo's responses, of the lengths real ones have.
const (
	echoMessageID = "8f0c6a6e-2f4b-4c4e-9d3e-3b1e6f1d2a7c"
	echoMD5       = "9e107d9d372bb6826bd81d3542a419d6"
	echoRequestID = "00000000-0000-4000-8000-000000000000"
	// echoReceipt is as long as a Baton receipt handle (53 bytes, base64).
	echoReceipt = "BwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTIzNDU2Nzg5Ojs"
)

// NewEcho returns an Echo whose received messages carry bodies of bodySize
// bytes.
func NewEcho(bodySize int) *Echo {
	return &Echo{message: wire.Message{
		MessageId: echoMessageID, ReceiptHandle: echoReceipt, MD5OfBody: echoMD5, Body: payload(max(bodySize, 1)),
	}}
}

// ServeHTTP answers one request.
func (e *Echo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	if !ok || r.Method != http.MethodPost {
		echoError(w, http.StatusBadRequest, "UnknownOperationException", "send AWS JSON 1.0 requests")
		return
	}
	body, err := readBody(r)
	if err != nil {
		echoError(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	out, err := e.answer(action, r.Host, body)
	if err != nil {
		echoError(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		echoError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", jsonContentType[0])
	// As Baton does: a response of more than 2 KiB would otherwise be sent
	// chunked, work for the echo and its client that Baton's spare them.
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("x-amzn-RequestId", echoRequestID)
	w.Write(b)
}

// answer decodes body as action's request and returns its response.
func (e *Echo) answer(action, host string, body []byte) (any, error) {
	decode := func(in any) error { return json.Unmarshal(body, in) }
	switch action {
	case "CreateQueue":
		var in wire.CreateQueueInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return &wire.CreateQueueOutput{QueueUrl: "http://" + host + "/000000000000/" + in.QueueName}, nil
	case "GetQueueUrl":
		var in wire.GetQueueUrlInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return &wire.GetQueueUrlOutput{QueueUrl: "http://" + host + "/000000000000/" + in.QueueName}, nil
	case "DeleteQueue":
		var in wire.DeleteQueueInput
		return struct{}{}, decode(&in)
	case "PurgeQueue":
		var in wire.PurgeQueueInput
		return struct{}{}, decode(&in)
	case "SendMessage":
		var in wire.SendMessageInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return &wire.SendMessageOutput{MessageId: echoMessageID, MD5OfMessageBody: echoMD5}, nil
	case "SendMessageBatch":
		var in wire.SendMessageBatchInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		out := &wire.SendMessageBatchOutput{
			Successful: make([]wire.SendMessageBatchResultEntry, len(in.Entries)),
			Failed:     []wire.BatchResultErrorEntry{},
		}
		for i, en := range in.Entries {
			out.Successful[i] = wire.SendMessageBatchResultEntry{Id: en.Id, MessageId: echoMessageID, MD5OfMessageBody: echoMD5}
		}
		return out, nil
	case "ReceiveMessage":
		var in wire.ReceiveMessageInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		n := 1
		if in.MaxNumberOfMessages != nil {
			n = min(max(*in.MaxNumberOfMessages, 1), 10)
		}
		out := &wire.ReceiveMessageOutput{Messages: make([]wire.Message, n)}
		for i := range out.Messages {
			out.Messages[i] = e.message
		}
		return out, nil
	case "DeleteMessage":
		var in wire.DeleteMessageInput
		return struct{}{}, decode(&in)
	case "DeleteMessageBatch":
		var in wire.DeleteMessageBatchInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		out := &wire.DeleteMessageBatchOutput{
			Successful: make([]wire.BatchResultEntry, len(in.Entries)),
			Failed:     []wire.BatchResultErrorEntry{},
		}
		for i, en := range in.Entries {
			out.Successful[i] = wire.BatchResultEntry{Id: en.Id}
		}
		return out, nil
	case "ChangeMessageVisibility":
		var in wire.ChangeMessageVisibilityInput
		return struct{}{}, decode(&in)
	}
	return nil, errors.New("echo does not know " + action)
}

// readBody reads r's body in one go when its length is known, as Baton
// does: io.ReadAll starts at 512 bytes and grows, copying a 1 KiB message
// three times, work a real server need not do and the ceiling must not
// either.
func readBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= 1<<20+64<<10 {
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(r.Body)
}

func echoError(w http.ResponseWriter, status int, shape, msg string) {
	b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.sqs#" + shape, "message": msg})
	w.Header().Set("Content-Type", jsonContentType[0])
	w.WriteHeader(status)
	w.Write(b)
}

// StartEcho serves an Echo on 127.0.0.1 (a random port) with the HTTP
// server settings `baton serve` uses, and returns its URL and a function
// that stops it.
func StartEcho(bodySize int) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		Handler:           NewEcho(bodySize),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}
