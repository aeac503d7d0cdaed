package server

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/protocol/awsjson"
	"github.com/baton-sqs/baton/protocol/awsquery"
	"github.com/baton-sqs/baton/protocol/wire"
)

// localStackPathPrefix is the first segment of the queue URLs LocalStack
// hands out with SQS_ENDPOINT_STRATEGY=path,
// http://localhost:4566/queue/<region>/<account>/<name>, which its users
// paste into their configuration; queueRef (server.go) reads them.
const localStackPathPrefix = "queue"

// LocalStack's message-peek endpoint, for users moving from it
// (docs/migrating.md): a ReceiveMessage that leases nothing.
//
//	GET|POST /_aws/sqs/messages?QueueUrl=URL[&ShowInvisible=true][&ShowDelayed=true]
//	GET|POST /_aws/sqs/messages/{region}/{account}/{queue}[?ShowInvisible=true…]
//
// QueueUrl comes as a query or form parameter, or in a ReceiveMessage call
// an SDK sends to the endpoint http://host/_aws/sqs/messages (JSON or
// Query). The answer is ReceiveMessage's, in the protocol of the request:
// AWS JSON for an X-Amz-Target request, else Query XML, or the Query
// answer's JSON form for an Accept: application/json. It lists the
// queue's visible messages, oldest first, with the in-flight ones under
// ShowInvisible and the delayed ones under ShowDelayed (each message then
// carries IsVisible or IsDelayed among its attributes), every system and
// message attribute, and the receipt handle SQS/BACKDOOR/ACCESS, which no
// delete accepts. Nothing about a message changes: the listing is the
// admin browse's (admin_browse.go).

// peekPath is where the endpoint answers.
const peekPath = "/_aws/sqs/messages"

// peekReceiptHandle is the handle every listed message carries: the
// listing leases nothing, so there is no lease to name.
const peekReceiptHandle = "SQS/BACKDOOR/ACCESS"

// maxPeekMessages bounds one answer; a larger queue is refused rather
// than listed in part without saying so.
const maxPeekMessages = 10 * engine.MaxBrowseLimit

func isPeekPath(path string) bool {
	return path == peekPath || strings.HasPrefix(path, peekPath+"/")
}

// servePeek answers the peek endpoint. It runs where the SQS API runs,
// after the same authentication and checks.
func (s *Server) servePeek(w http.ResponseWriter, r *http.Request) {
	req := requestFrom(r.Context())
	_, isJSON := awsjson.Operation(r)
	fail := func(err error) {
		if isJSON {
			awsjson.WriteError(w, baton.AsError(err))
			return
		}
		writeQueryError(w, r, baton.AsError(err), req.reqID)
	}
	q := r.URL.Query()
	if !isJSON {
		if err := r.ParseForm(); err != nil {
			fail(readError(r, err))
			return
		}
		q = r.Form
	}
	ref, err := s.peekRef(r)
	if err != nil {
		fail(err)
		return
	}
	out, err := s.peekMessages(r.Context(), ref, isTrue(q.Get("ShowInvisible")), isTrue(q.Get("ShowDelayed")))
	if err != nil {
		fail(err)
		return
	}
	switch op := s.ops["ReceiveMessage"]; {
	case isJSON:
		awsjson.WriteResult(w, out)
	case awsquery.WantsJSON(r):
		awsquery.WriteResultJSON(w, op, out, req.reqID)
	default:
		awsquery.WriteResult(w, op, out, req.reqID)
	}
}

// peekRef is the queue a peek names: by the path's region, account and
// name, else by its QueueUrl. A queue URL whose host names a region
// (sqs.eu-west-1.localhost.localstack.cloud) is of that region.
func (s *Server) peekRef(r *http.Request) (engine.QueueRef, error) {
	ctx := r.Context()
	if rest, ok := strings.CutPrefix(r.URL.Path, peekPath+"/"); ok {
		parts := strings.Split(rest, "/")
		if len(parts) != 3 || !baton.ValidRegion(parts[0]) || parts[1] != s.accountOf(ctx) {
			return engine.QueueRef{}, errNoSuchQueue()
		}
		return engine.QueueRef{Region: parts[0], Account: parts[1], Name: parts[2]}, nil
	}
	queueURL, err := s.peekQueueURL(r)
	if err != nil {
		return engine.QueueRef{}, err
	}
	if queueURL == "" {
		return engine.QueueRef{}, baton.MissingParameter("QueueUrl")
	}
	ref, err := s.queueRef(ctx, queueURL)
	if err != nil {
		return ref, err
	}
	if u, err := url.Parse(queueURL); err == nil && HostRegion(u.Host) != "" {
		ref.Region = HostRegion(u.Host)
	}
	return ref, nil
}

// peekQueueURL reads the QueueUrl of a peek: from a JSON ReceiveMessage
// body, or from the query and form (parsed by servePeek).
func (s *Server) peekQueueURL(r *http.Request) (string, error) {
	name, isJSON := awsjson.Operation(r)
	if isJSON {
		if name != "ReceiveMessage" {
			return "", baton.Errorf(baton.ErrInvalidAction, "The action %s is not valid for this endpoint, which answers ReceiveMessage only.", clip(name))
		}
		body, buf, err := requestBody(r)
		if err != nil {
			releaseBody(buf, body)
			return "", readError(r, err)
		}
		in, err := awsjson.Decode(body, s.ops["ReceiveMessage"])
		releaseBody(buf, body) // the input holds copies, not the body
		if err != nil {
			return "", err
		}
		return in.(*wire.ReceiveMessageInput).QueueUrl, nil
	}
	if a := r.Form.Get("Action"); a != "" && a != "ReceiveMessage" {
		return "", baton.Errorf(baton.ErrInvalidAction, "The action %s is not valid for this endpoint, which answers ReceiveMessage only.", clip(a))
	}
	return r.Form.Get("QueueUrl"), nil
}

// peekMessages lists a queue's messages as ReceiveMessage would give them,
// leasing none.
func (s *Server) peekMessages(ctx context.Context, ref engine.QueueRef, invisible, delayed bool) (*wire.ReceiveMessageOutput, error) {
	states := baton.StateVisible
	if invisible {
		states |= baton.StateInFlight
	}
	if delayed {
		states |= baton.StateDelayed
	}
	out := &wire.ReceiveMessageOutput{}
	p := engine.BrowseParams{States: states, Limit: engine.MaxBrowseLimit}
	for {
		page, err := s.engine.BrowseMessages(ctx, ref, p)
		if err != nil {
			return nil, err
		}
		for _, m := range page.Messages {
			out.Messages = append(out.Messages, peekedMessage(m, page, invisible, delayed))
		}
		if page.Next == "" {
			return out, nil
		}
		if len(out.Messages) >= maxPeekMessages {
			return nil, baton.Errorf(baton.ErrOverLimit,
				"The queue holds more than %d messages of the states asked for; browse it page by page at /admin/api/queues/%s/messages.", maxPeekMessages, ref.Name)
		}
		p.Cursor = page.Next
	}
}

func peekedMessage(m *baton.Message, page engine.BrowsePage, invisible, delayed bool) wire.Message {
	attrs := engine.SystemAttributes(m)
	st := m.StateAt(page.Now)
	if invisible {
		attrs["IsVisible"] = boolText(st == baton.StateVisible)
	}
	if delayed {
		attrs["IsDelayed"] = boolText(st == baton.StateDelayed)
	}
	body := m.BodyMD5
	if body == "" {
		body = engine.MD5OfBody(m.Body)
	}
	return wire.Message{
		MessageId: m.ID, ReceiptHandle: peekReceiptHandle, MD5OfBody: body, Body: m.Body,
		Attributes: attrs, MD5OfMessageAttributes: engine.MD5OfAttributes(m.Attributes),
		MessageAttributes: toWireAttributes(m.Attributes),
	}
}

func isTrue(v string) bool { return strings.EqualFold(v, "true") || v == "1" }

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// LocalStack's other internal endpoints (/_localstack/… and /_aws/…, but
// the health and peek paths Baton serves) are not served. A request to one
// without an Action would otherwise get SQS's bare <UnknownOperationException/>,
// which tells a user moving from LocalStack nothing; it gets a 404 that
// says what is not served and where Baton has the same (docs/migrating.md).
// A request with an Action is an SQS call (a queue may be named _aws) and
// is served as one.

// localStackEquivalents maps a LocalStack internal path (or a prefix of
// one, ending in /) to what Baton has instead.
var localStackEquivalents = []struct{ path, instead string }{
	{"/_aws/sns/sms-messages", "what SMS subscriptions and phone numbers would have been sent is at GET /admin/api/sns/deliveries?protocol=sms (docs/sns.md)"},
	{"/_aws/sns/subscription-tokens/", "a pending subscription's confirmation, with its Token, is at GET /admin/api/sns/deliveries?type=SubscriptionConfirmation for email, is sent to an HTTP/S endpoint, and is logged (docs/sns.md)"},
	{"/_localstack/init", "Baton runs no init hooks: declare queues and topics in the config file (baton serve --config), or run the hooks with docs/migrating/localstack/run-init.sh"},
}

// isLocalStackInternalPath reports whether path is under one of
// LocalStack's internal prefixes.
func isLocalStackInternalPath(path string) bool {
	return strings.HasPrefix(path, "/_localstack/") || strings.HasPrefix(path, "/_aws/")
}

// writeLocalStackNotServed answers a LocalStack internal path Baton does
// not serve: 404, saying so, and what Baton has instead where it has it.
// Its health path, which Baton serves to GET and HEAD, answers another
// method (LocalStack's POST restarts or kills it) 405, saying which it
// serves.
func writeLocalStackNotServed(w http.ResponseWriter, method, path string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if path == localStackHealthPath {
		w.Header().Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
		io.WriteString(w, "Baton answers GET and HEAD "+path+", LocalStack's health, not "+method+": it has no restart or kill action.\n")
		return
	}
	msg := "Baton does not serve LocalStack's " + path + "."
	for _, e := range localStackEquivalents {
		if path == e.path || strings.HasPrefix(path, e.path) && (strings.HasSuffix(e.path, "/") || path[len(e.path)] == '/') {
			msg += " Instead, " + e.instead + "."
			break
		}
	}
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, msg+"\n")
}
