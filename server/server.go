package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/answered"
	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/protocol/awsjson"
	"github.com/baton-sqs/baton/protocol/awsquery"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/sns"
)

// maxBodyBytes bounds a request body. A request may carry 1 MiB of message
// bodies and attributes (docs/sqs-behaviour.md §2), and its encoding can triple that:
// Query percent-encodes every byte of a non-ASCII character (é is %C3%A9),
// botocore's JSON escapes it (\u00e9), and binary attributes grow by a third
// in base64 before '+' and '/' are percent-encoded. 4 MiB plus 64 KiB of
// envelope admits every valid request.
const maxBodyBytes = 4<<20 + 64<<10

// Config configures a Server.
type Config struct {
	Engine *engine.Engine
	// Account is the account id of requests when Verifier is nil (default
	// 000000000000). With a Verifier, each request acts for its signing
	// key's account.
	Account string
	Logger  *slog.Logger
	// Verifier, if set, makes every SQS request prove a SigV4 signature by
	// one of its keys (see Authenticate); /healthz stays open.
	Verifier *sigv4.Verifier
	// MaxLongPollsPerClient bounds the ReceiveMessage calls one client
	// may have waiting at once; more are refused with RequestThrottled. A
	// client is the access key a request is signed with, or for an
	// unsigned request its account and address. 0 means
	// DefaultMaxLongPollsPerClient, a negative value no bound.
	MaxLongPollsPerClient int
	// Refusing, if set, is asked before each SQS request: while it
	// returns an error the server answers ServiceUnavailable (503) with
	// it, as a node whose clock it cannot trust does.
	Refusing func() error
	// TrustProxies are the proxies (a load balancer) whose
	// X-Forwarded-For header names the client's address: for requests
	// from any other address the header is ignored.
	TrustProxies []netip.Prefix
	// Collectors are extra Prometheus collectors for /metrics, such as a
	// durable store's commit statistics.
	Collectors []prometheus.Collector
	// Ready, if set, tells /healthz whether the server can serve: a
	// database store's ping. /healthz answers 503 while it fails.
	Ready func(context.Context) error
	// LocalHostsOnly, for a server without credentials listening on a
	// loopback address only, refuses with AccessDenied every request whose
	// Host is neither an IP address nor a localhost name: a web page whose
	// name is pointed at 127.0.0.1 (DNS rebinding) is one (crosssite.go).
	LocalHostsOnly bool
	// AllowHosts are more host names a LocalHostsOnly server answers,
	// each with its subdomains: names the operator trusts to resolve only
	// to this machine, such as localhost.localstack.cloud (crosssite.go).
	AllowHosts []string
	// AdvertiseURL, if set, is the scheme://host[:port] the queue URLs the
	// server hands out (CreateQueue, GetQueueUrl, ListQueues,
	// ListDeadLetterSourceQueues) start with, as given, instead of the
	// request's scheme and Host: for clients that reach the server by
	// another name (a container network) or send a Host without the
	// port. A request's queue URL is still accepted with any host.
	AdvertiseURL string
	// Backup, if set, writes a point-in-time copy of the store and returns
	// where (POST /admin/api/backup, admin_backup.go). Nil for a store
	// without backups, and when the operator named no place for them.
	Backup func(context.Context) (string, error)
	// SNS, if set, serves the SNS API on the same endpoint (sns.go); nil
	// answers SNS actions as unknown.
	SNS *sns.Service
}

// Server is the HTTP handler of the SQS API.
type Server struct {
	engine *engine.Engine
	// account is the default account, used when a request names none.
	account string
	log     *slog.Logger
	ops     protocol.Table
	// snsOps are the SNS actions (sns.go), nil without Config.SNS.
	snsOps protocol.Table
	// sns is Config.SNS.
	sns *sns.Service
	// api serves the SQS API, admin the admin JSON API and metricsAPI
	// /metrics, each behind authentication when it is on.
	api        http.Handler
	admin      http.Handler
	metricsAPI http.Handler
	metrics    *metrics
	ready      func(context.Context) error
	polls      *pollLimiter
	// refusing is Config.Refusing.
	refusing func() error
	// backup is Config.Backup; backupMu lets one run at a time.
	backup   func(context.Context) (string, error)
	backupMu sync.Mutex
	// trustProxies is Config.TrustProxies.
	trustProxies []netip.Prefix
	// localHostsOnly is Config.LocalHostsOnly.
	localHostsOnly bool
	// allowHosts is Config.AllowHosts, lowercase.
	allowHosts []string
	// advertiseURL is Config.AdvertiseURL without a trailing slash.
	advertiseURL string
	// pprof serves /debug/pprof/ to the admin credentials (pprof.go).
	pprof http.Handler
	// dashboard serves the web dashboard and Basic-authenticated admin
	// requests (ui.go).
	dashboard http.Handler
	// bounded is serve with every write of its answers bounded
	// (ServeHTTP).
	bounded http.Handler

	// unavailable logs the requests answered ServiceUnavailable, a few;
	// readiness the health checks' findings, a few.
	unavailable *unavailableLog
	readiness   *readinessLog
}

// New returns a Server.
func New(cfg Config) *Server {
	if cfg.Account == "" {
		cfg.Account = "000000000000"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxLongPollsPerClient == 0 {
		cfg.MaxLongPollsPerClient = DefaultMaxLongPollsPerClient
	}
	s := &Server{engine: cfg.Engine, account: cfg.Account, log: cfg.Logger, polls: newPollLimiter(cfg.MaxLongPollsPerClient)}
	s.ops = s.operations()
	if cfg.SNS != nil {
		s.sns, s.snsOps = cfg.SNS, s.snsOperations(cfg.SNS)
	}
	s.unavailable = newUnavailableLog(cfg.Logger, cfg.Engine.Clock())
	s.readiness = newReadinessLog(cfg.Logger, cfg.Engine.Clock())
	s.ready = cfg.Ready
	s.trustProxies = cfg.TrustProxies
	s.refusing = cfg.Refusing
	s.backup = cfg.Backup
	s.localHostsOnly, s.allowHosts = cfg.LocalHostsOnly, normalHosts(cfg.AllowHosts)
	s.advertiseURL = strings.TrimRight(cfg.AdvertiseURL, "/")
	s.api = http.HandlerFunc(s.serveAPI)
	s.metrics = newMetrics(cfg.Engine, cfg.Collectors...)
	s.metrics.sns = cfg.SNS
	s.metrics.unread = func(err error) { s.unavailable.note("", "/metrics", err) }
	s.admin, s.metricsAPI = s.adminMux(), s.metrics.handler()
	signIns := newSignInGuard(cfg.Engine.Clock())
	s.dashboard = s.newDashboard(cfg.Verifier, signIns, s.admin) // before s.admin is wrapped for SigV4
	s.pprof = newPprofHandler(cfg.Verifier, signIns, cfg.Logger)
	if cfg.Verifier != nil {
		s.api = Authenticate(cfg.Verifier, cfg.Logger, s.api)
		s.admin = Authenticate(cfg.Verifier, cfg.Logger, s.admin)
		s.metricsAPI = signedOrBasic(cfg.Verifier, signIns, cfg.Logger, s.metricsAPI)
	}
	s.bounded = answered.Handler(http.HandlerFunc(s.serve))
	return s
}

// Close says the counts of the log lines held back now (503s, failed
// health checks: see unavailableLog), rather than once their interval has
// passed, and ends the goroutines that would. Call it once the server
// serves no more requests; lines held back after it are counted by the
// next line of their kind only.
func (s *Server) Close() {
	s.unavailable.pace.Close()
	s.readiness.pace.Close()
}

// request is what handlers need to know of the HTTP request.
type request struct {
	// baseURL is scheme://host, from which queue URLs are built: the
	// request's, or Config.AdvertiseURL.
	baseURL string
	// pathQueue is the queue URL a Query request was sent to, if any.
	pathQueue string
	reqID     string
	// client is the address (IP) the request came from: the connection's
	// source, or what a trusted proxy says it is (clientAddr).
	client string
	// accessKey is the access key id the request is signed with, if any.
	accessKey string
	// traceHeader is the X-Amzn-Trace-Id header, which a send records
	// as the messages' AWSTraceHeader.
	traceHeader string
	// region is the region the request is for (requestRegion); "" is the
	// engine's default region.
	region string
}

type requestKey struct{}

func requestFrom(ctx context.Context) request {
	r, _ := ctx.Value(requestKey{}).(request)
	return r
}

// ServeHTTP serves everything on the listener: /healthz, /metrics,
// /debug/pprof/, the dashboard, the admin API, the SNS API and its signing
// certificate, and the SQS API (docs/architecture.md §2, "Handling one
// request"). Every write of every answer is bounded (answered.Handler): a
// peer that stopped reading without closing holds a handler seconds, not
// until TCP gives up, and lets go of what it holds (a live stream's slot,
// a profile's lock, a page).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.bounded.ServeHTTP(w, r)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if len(r.TransferEncoding) > 0 {
		// net/http reads a chunked body by its chunks and drops a
		// Content-Length sent with it, so nothing here can tell whether
		// the request had both. RFC 9112 §6.1 requires closing the
		// connection after one that had: a proxy in front may have framed
		// it by its length, and bytes after the chunks would run here as a
		// request the proxy never saw. So a chunked request always closes
		// its connection (AWS's SDKs send Content-Length).
		w.Header().Set("Connection", "close")
	}
	if isHealthRequest(r) { // compat.go
		s.serveHealth(w, r)
		return
	}
	reqID := ids.NewUUID()
	w.Header().Set("x-amzn-RequestId", reqID)
	// A panic is answered as an InternalError (HTTP 500) in the protocol
	// the client speaks: a Query client cannot read the JSON one. Only the
	// SQS API speaks Query; everything else here answers in JSON.
	sqsAPI := false
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic serving request", "request_id", reqID, "panic", p)
			if _, isJSON := awsjson.Operation(r); sqsAPI && !isJSON {
				writeQueryError(w, r, baton.AsError(nil), reqID)
				return
			}
			awsjson.WriteError(w, baton.AsError(nil))
		}
	}()
	r = s.withRequest(r, reqID)
	if s.localHostsOnly && !isLocalHost(r.Host, s.allowHosts) {
		s.log.Debug("request refused: not a local host name", "request_id", reqID, "host", r.Host)
		writeError(w, r, hostRefusal(r.Host)) // crosssite.go
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	switch {
	case r.URL.Path == "/metrics":
		s.metricsAPI.ServeHTTP(w, r)
	case isPprofPath(r.URL.Path):
		if err := checkCrossSite(r); err != nil { // a profile or trace costs CPU
			http.Error(w, "profiles are not served to pages of other origins", http.StatusForbidden)
			return
		}
		s.pprof.ServeHTTP(w, r)
	case s.sns != nil && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, sns.CertificatePrefix):
		s.serveCertificate(w, r) // sns.go
	case isDashboardRequest(r):
		s.dashboard.ServeHTTP(w, r)
	case strings.HasPrefix(r.URL.Path, "/admin/api/"):
		s.admin.ServeHTTP(w, r)
	default:
		sqsAPI = true
		s.serveAWS(w, r)
	}
}

// withRequest is r with what every handler reads of it in its context:
// the request's id, the base of the queue URLs it is answered with, its
// client (also for the lease ledger) and whether it renews on progress.
func (s *Server) withRequest(r *http.Request, reqID string) *http.Request {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	client := s.clientAddr(r)
	baseURL := scheme + "://" + r.Host
	if s.advertiseURL != "" {
		baseURL = s.advertiseURL
	}
	ctx := context.WithValue(r.Context(), requestKey{}, request{baseURL: baseURL, reqID: reqID, client: client,
		accessKey: signingKey(r), traceHeader: r.Header.Get("X-Amzn-Trace-Id")})
	ctx = ledger.WithClient(ctx, ledger.Client{Addr: client, UserAgent: r.UserAgent()})
	if r.Header.Get(baton.RenewalHeader) == baton.RenewalProgress {
		ctx = ledger.WithProgress(ctx)
	}
	return r.WithContext(ctx)
}

// serveAWS serves a request of the SQS or SNS API (and SNS's unsubscribe
// URL), once it is known to come from no page of another origin, the
// server is serving and its region is known.
func (s *Server) serveAWS(w http.ResponseWriter, r *http.Request) {
	if err := checkCrossSite(r); err != nil { // crosssite.go
		writeError(w, r, baton.Errorf(baton.ErrAccessDenied, "The SQS API refuses what a browser sends for a page of another origin: %v.", err))
		return
	}
	if s.refusing != nil {
		if err := s.refusing(); err != nil {
			writeError(w, r, baton.Errorf(baton.ErrServiceUnavailable, "This server is not serving: %v.", err))
			return
		}
	}
	region, rerr := requestRegion(r) // region.go
	if rerr != nil {
		writeError(w, r, rerr)
		return
	}
	req := requestFrom(r.Context())
	req.region = region
	r = r.WithContext(context.WithValue(r.Context(), requestKey{}, req))
	if s.sns != nil && isUnsubscribeURL(r) {
		s.serveUnsubscribeURL(w, r) // sns.go
		return
	}
	s.api.ServeHTTP(w, r)
}

// serveAPI dispatches an (authenticated) SQS request to its protocol.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	if isPeekPath(r.URL.Path) { // localstack.go
		s.servePeek(w, r)
		return
	}
	reqID := requestFrom(r.Context()).reqID
	if name, ok := awsjson.Operation(r); ok {
		if !awsjson.HasContentType(r) {
			// An operation named in X-Amz-Target but sent in another
			// media type is no request AWS's JSON protocol reads: AWS
			// answers <UnknownOperationException/> as it does a Query
			// request without Action.
			writeUnknownOperation(w)
			return
		}
		s.serveJSON(w, r, name, reqID)
		return
	}
	s.serveQuery(w, r, reqID)
}

// writeUnknownOperation writes AWS's answer to a request in which it finds
// no operation to run: 404 and a bare <UnknownOperationException/>.
func writeUnknownOperation(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, "<UnknownOperationException/>")
}

func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, name, reqID string) {
	op, ok := s.ops[name]
	if !ok {
		awsjson.WriteError(w, baton.Errorf(baton.ErrUnknownOperation, "Unrecognized operation %q.", name))
		return
	}
	body, buf, err := requestBody(r) // body.go
	if err != nil {
		awsjson.WriteError(w, readError(r, err))
		return
	}
	in, err := awsjson.Decode(body, op)
	releaseBody(buf, body) // the input holds copies, not the body
	if err != nil {
		s.metrics.observe(op.Name, err, 0) // refused before the call: counted all the same
	} else {
		var out any
		ctx, answer := withAnswer(r.Context(), op) // answer.go
		if out, err = s.call(ctx, op, in, reqID); err == nil {
			s.deliver(ctx, w, answer, func(w http.ResponseWriter) { awsjson.WriteResult(w, out) })
			return
		}
	}
	awsjson.WriteError(w, baton.AsError(err))
}

func (s *Server) serveQuery(w http.ResponseWriter, r *http.Request, reqID string) {
	if err := parseForm(r); err != nil { // form.go
		writeQueryError(w, r, readError(r, err), reqID)
		return
	}
	if s.snsOps != nil && s.isSNSRequest(r) {
		s.serveSNS(w, r, reqID)
		return
	}
	action := r.Form.Get("Action")
	onQueue := r.URL.Path != "/" && r.URL.Path != ""
	if action == "" {
		if isLocalStackInternalPath(r.URL.Path) { // localstack.go
			writeLocalStackNotServed(w, r.Method, r.URL.Path)
			return
		}
		if r.Method == http.MethodGet && onQueue {
			writeUnknownOperation(w)
			return
		}
		writeQueryError(w, r, baton.Errorf(baton.ErrInvalidAction, "No Action was given; send an Action parameter or an X-Amz-Target header."), reqID)
		return
	}
	op, ok := s.ops[action]
	if !ok || onQueue && (action == "CreateQueue" || action == "ListQueues") {
		writeQueryError(w, r, baton.Errorf(baton.ErrInvalidAction, "The action %s is not valid for this endpoint.", action), reqID)
		return
	}
	ctx := r.Context()
	if onQueue {
		req := requestFrom(ctx)
		req.pathQueue = r.URL.Path
		ctx = context.WithValue(ctx, requestKey{}, req)
	}
	in, err := awsquery.Decode(r.Form, op)
	if err != nil {
		s.metrics.observe(op.Name, err, 0)
	} else {
		var out any
		ctx, answer := withAnswer(ctx, op) // answer.go
		if out, err = s.call(ctx, op, in, reqID); err == nil {
			s.deliver(ctx, w, answer, func(w http.ResponseWriter) {
				if awsquery.WantsJSON(r) {
					awsquery.WriteResultJSON(w, op, out, reqID)
				} else {
					awsquery.WriteResult(w, op, out, reqID)
				}
			})
			return
		}
	}
	writeQueryError(w, r, baton.AsError(err), reqID)
}

// writeQueryError writes a Query request's error, in JSON if the request
// asks for it (awsquery.WantsJSON), else in XML.
func writeQueryError(w http.ResponseWriter, r *http.Request, e *baton.Error, reqID string) {
	if awsquery.WantsJSON(r) {
		awsquery.WriteErrorJSON(w, e, reqID)
		return
	}
	awsquery.WriteError(w, e, reqID)
}

// call runs an operation and logs what the client will not see.
func (s *Server) call(ctx context.Context, op protocol.Operation, in any, reqID string) (any, error) {
	clock := s.engine.Clock()
	start := clock.Now()
	out, err := op.Call(ctx, in)
	s.metrics.observe(op.Name, err, clock.Now().Sub(start))
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// The client hung up (a worker stopping mid long poll): it
			// reads no answer, and nothing here failed.
			s.log.Debug("request abandoned by its client", "request_id", reqID, "action", op.Name, "err", err)
		} else if e := baton.AsError(err); e.Code == baton.ErrInternal {
			s.log.Error("internal error", "request_id", reqID, "action", op.Name, "err", err)
		} else if e.Code == baton.ErrServiceUnavailable {
			s.unavailable.note(reqID, op.Name, err)
		} else {
			s.log.Debug("request failed", "request_id", reqID, "action", op.Name, "code", e.Code, "message", e.Message)
		}
		return nil, err
	}
	s.log.Debug("request", "request_id", reqID, "action", op.Name)
	return out, nil
}

// readError is how a body that cannot be read or parsed (too large, cut
// short, a malformed form) is reported in r's protocol. A body over
// maxBodyBytes is HTTP 413, as AWS answers a request larger than it
// accepts, whatever the protocol (docs/sqs-behaviour.md §2, request size).
func readError(r *http.Request, err error) *baton.Error {
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		return baton.Errorf(baton.ErrRequestEntityTooLarge,
			"Request Entity Too Large: the request body is longer than %d bytes.", tooLarge.Limit)
	}
	if _, ok := awsjson.Operation(r); ok {
		return baton.Errorf(baton.ErrSerialization, "Could not read the request body: %v", err)
	}
	return baton.Errorf(baton.ErrInvalidParameterValue, "The request could not be parsed: %v", err)
}

// accountOf is the account a request acts for: its signing key's when
// authentication is on, else the configured one.
func (s *Server) accountOf(ctx context.Context) string {
	if a := baton.AccountFromContext(ctx); a != "" {
		return a
	}
	return s.account
}

// regionOf is the region a request acts in: its own (requestRegion), or
// "" for the engine's default region.
func regionOf(ctx context.Context) string { return requestFrom(ctx).region }

// queueRef resolves a QueueUrl parameter: a full URL or a path
// (/<account>/<name>, or LocalStack's /queue/<region>/<account>/<name>; the
// host is ignored) or a bare queue name, in the request's region. A Query
// request sent to a queue URL uses that URL when the parameter is absent. A
// queue of another account or region than the request's does not exist for
// it, and neither does the queue of a URL without a path (http://host or
// http://host/): SQS names no queue there and answers NonExistentQueue, not
// InvalidAddress (docs/sqs-behaviour.md §1.5).
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
		if j < 0 || strings.Trim(path[j:], "/") == "" {
			return engine.QueueRef{}, errNoSuchQueue()
		}
		path = path[j:]
	}
	path = strings.Trim(path, "/")
	parts := strings.Split(path, "/")
	region := regionOf(ctx)
	if len(parts) == 4 && parts[0] == localStackPathPrefix && baton.ValidRegion(parts[1]) {
		// LocalStack's path-style queue URL, /queue/<region>/<account>/<name>:
		// the queue /<account>/<name> of that region, which a request of
		// another region does not see.
		if region != "" && region != parts[1] {
			return engine.QueueRef{}, errNoSuchQueue()
		}
		region, parts = parts[1], parts[2:]
	}
	account := s.accountOf(ctx)
	switch {
	case len(parts) == 1 && parts[0] != "":
		return engine.QueueRef{Region: region, Account: account, Name: parts[0]}, nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		if parts[0] != account {
			return engine.QueueRef{}, errNoSuchQueue()
		}
		return engine.QueueRef{Region: region, Account: account, Name: parts[1]}, nil
	}
	return engine.QueueRef{}, invalidAddress(queueURL)
}

// errNoSuchQueue is the engine's answer for a missing queue, given for
// queues of other accounts, which a request may not see.
func errNoSuchQueue() error {
	return baton.Errorf(baton.ErrQueueDoesNotExist, "The specified queue does not exist.")
}

func invalidAddress(u string) error {
	return baton.Errorf(baton.ErrInvalidAddress, "The address %s is not valid for this endpoint.", u)
}

// queueURL builds the URL of a queue for the requesting client.
func queueURL(ctx context.Context, q *baton.Queue) string {
	return fmt.Sprintf("%s/%s/%s", requestFrom(ctx).baseURL, q.Account, q.Name)
}

// serveHealth answers 200 "ok" while the server can serve requests, and 503
// with the reason while its store cannot be reached, at /healthz and at
// the paths other emulators' users health-check (isHealthRequest);
// /_localstack/health answers in LocalStack's shape (compat.go).
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	var notReady error
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		notReady = s.ready(ctx)
		s.readiness.saw(notReady)
	}
	if r.URL.Path == localStackHealthPath {
		s.writeLocalStackHealth(w, notReady)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	if notReady != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		// What is wrong, for the operator or the load balancer's log:
		// the store's words ("database unreachable: ...") on one line.
		io.WriteString(w, "store unavailable: "+strings.ReplaceAll(notReady.Error(), "\n", " ")+"\n")
		return
	}
	io.WriteString(w, "ok\n")
}
