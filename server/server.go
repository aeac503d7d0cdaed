package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/protocol/awsjson"
	"github.com/baton-sqs/baton/protocol/awsquery"
)

// maxBodyBytes bounds a request body: a 1 MiB batch whose binary attributes
// grow by a third in base64, plus the envelope.
const maxBodyBytes = 3 << 20

// Config configures a Server.
type Config struct {
	Engine *engine.Engine
	// Account is the account id of requests (default 000000000000).
	Account string
	Logger  *slog.Logger
}

// Server is the HTTP handler of the SQS API.
type Server struct {
	engine  *engine.Engine
	account string
	log     *slog.Logger
	ops     protocol.Table
}

// New returns a Server.
func New(cfg Config) *Server {
	if cfg.Account == "" {
		cfg.Account = "000000000000"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{engine: cfg.Engine, account: cfg.Account, log: cfg.Logger}
	s.ops = s.operations()
	return s
}

// request is what handlers need to know of the HTTP request.
type request struct {
	// baseURL is scheme://host, from which queue URLs are built.
	baseURL string
	// pathQueue is the queue URL a Query request was sent to, if any.
	pathQueue string
}

type requestKey struct{}

func requestFrom(ctx context.Context) request {
	r, _ := ctx.Value(requestKey{}).(request)
	return r
}

// ServeHTTP serves the SQS API and /healthz.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
		return
	}
	reqID := ids.NewUUID()
	w.Header().Set("x-amzn-RequestId", reqID)
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic serving request", "request_id", reqID, "panic", p)
			awsjson.WriteError(w, baton.AsError(nil))
		}
	}()
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	ctx := context.WithValue(r.Context(), requestKey{}, request{baseURL: scheme + "://" + r.Host})
	r = r.WithContext(ctx)
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if name, ok := awsjson.Operation(r); ok {
		s.serveJSON(w, r, name, reqID)
		return
	}
	s.serveQuery(w, r, reqID)
}

func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, name, reqID string) {
	op, ok := s.ops[name]
	if !ok {
		awsjson.WriteError(w, baton.Errorf(baton.ErrUnknownOperation, "Unrecognized operation %q.", name))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		awsjson.WriteError(w, baton.Errorf(baton.ErrSerialization, "Could not read the request body: %v", err))
		return
	}
	in, err := awsjson.Decode(body, op)
	if err == nil {
		var out any
		if out, err = s.call(r.Context(), op, in, reqID); err == nil {
			awsjson.WriteResult(w, out)
			return
		}
	}
	awsjson.WriteError(w, baton.AsError(err))
}

func (s *Server) serveQuery(w http.ResponseWriter, r *http.Request, reqID string) {
	if err := r.ParseForm(); err != nil {
		awsquery.WriteError(w, baton.Errorf(baton.ErrInvalidParameterValue, "The request could not be parsed: %v", err), reqID)
		return
	}
	action := r.Form.Get("Action")
	onQueue := r.URL.Path != "/" && r.URL.Path != ""
	if action == "" {
		if r.Method == http.MethodGet && onQueue {
			w.Header().Set("Content-Type", "text/xml")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "<UnknownOperationException/>")
			return
		}
		awsquery.WriteError(w, baton.Errorf(baton.ErrInvalidAction, "No Action was given; send an Action parameter or an X-Amz-Target header."), reqID)
		return
	}
	op, ok := s.ops[action]
	if !ok || onQueue && (action == "CreateQueue" || action == "ListQueues") {
		awsquery.WriteError(w, baton.Errorf(baton.ErrInvalidAction, "The action %s is not valid for this endpoint.", action), reqID)
		return
	}
	ctx := r.Context()
	if onQueue {
		req := requestFrom(ctx)
		req.pathQueue = r.URL.Path
		ctx = context.WithValue(ctx, requestKey{}, req)
	}
	in, err := awsquery.Decode(r.Form, op)
	if err == nil {
		var out any
		if out, err = s.call(ctx, op, in, reqID); err == nil {
			awsquery.WriteResult(w, op, out, reqID)
			return
		}
	}
	awsquery.WriteError(w, baton.AsError(err), reqID)
}

// call runs an operation and logs what the client will not see.
func (s *Server) call(ctx context.Context, op protocol.Operation, in any, reqID string) (any, error) {
	out, err := op.Call(ctx, in)
	if err != nil {
		if e := baton.AsError(err); e.Code == baton.ErrInternal {
			s.log.Error("internal error", "request_id", reqID, "action", op.Name, "err", err)
		} else {
			s.log.Debug("request failed", "request_id", reqID, "action", op.Name, "code", e.Code, "message", e.Message)
		}
		return nil, err
	}
	s.log.Debug("request", "request_id", reqID, "action", op.Name)
	return out, nil
}

// queueRef resolves a QueueUrl parameter: a full URL or a path
// (/<account>/<name>, the host is ignored) or a bare queue name. A Query
// request sent to a queue URL uses that URL when the parameter is absent.
func (s *Server) queueRef(ctx context.Context, queueURL string) (engine.QueueRef, error) {
	if queueURL == "" {
		queueURL = requestFrom(ctx).pathQueue
		if queueURL == "" {
			return engine.QueueRef{}, baton.MissingParameter("QueueUrl")
		}
	}
	path := queueURL
	if i := strings.Index(path, "://"); i >= 0 {
		path = path[i+3:]
		j := strings.IndexByte(path, '/')
		if j < 0 {
			return engine.QueueRef{}, invalidAddress(queueURL)
		}
		path = path[j:]
	}
	path = strings.Trim(path, "/")
	parts := strings.Split(path, "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return engine.QueueRef{Account: s.account, Name: parts[0]}, nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return engine.QueueRef{Account: parts[0], Name: parts[1]}, nil
	}
	return engine.QueueRef{}, invalidAddress(queueURL)
}

func invalidAddress(u string) error {
	return baton.Errorf(baton.ErrInvalidAddress, "The address %s is not valid for this endpoint.", u)
}

// queueURL builds the URL of a queue for the requesting client.
func queueURL(ctx context.Context, q *baton.Queue) string {
	return fmt.Sprintf("%s/%s/%s", requestFrom(ctx).baseURL, q.Account, q.Name)
}
