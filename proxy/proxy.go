// Package proxy is `baton proxy`: an SQS endpoint that forwards every
// request to another one (Amazon SQS, or any server of the SQS API),
// re-signed with the proxy's own credentials, and answers the upstream's
// response as it came, but for the queue URLs it hands out, which name the
// proxy (urls.go). As requests and answers pass it feeds a lease ledger
// (engine/ledger) with the receives, visibility changes and deletes it sees,
// and serves the admin API's lease report, /metrics and the dashboard's
// lease pages from it, so that `baton doctor` diagnoses a queue that lives
// elsewhere. It sees only the
// traffic that passes it: a consumer that talks to the upstream directly is
// invisible to it.
package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/answered"
	"github.com/baton-sqs/baton/internal/lograte"
	"github.com/baton-sqs/baton/protocol/awsjson"
	"github.com/baton-sqs/baton/protocol/awsquery"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server/dashboard"
)

const (
	// maxRequest bounds the request body the proxy reads: SQS takes at
	// most 1 MiB of message payload a request, batches included, so this
	// leaves room for the encoding around it.
	maxRequest = 4 << 20
	// maxAnswer bounds the upstream answer the proxy reads: ten messages
	// of 1 MiB, with their attributes and encoding (XML's &amp; is five
	// bytes of one).
	maxAnswer = 64 << 20
	// DefaultUpstreamTimeout bounds one exchange with the upstream, from
	// sending the request to the answer's last byte: a long poll waits at
	// most 20 s.
	DefaultUpstreamTimeout = 60 * time.Second
	// DefaultMaxLeases is the default bound of the leases the proxy
	// tracks (Config.MaxLeases).
	DefaultMaxLeases = 100000
	// leftLogEvery is how often a client that leaves before its answers
	// is logged, per client and action (clientLeft).
	leftLogEvery = time.Minute
)

// Config configures a Proxy.
type Config struct {
	// Upstream is the SQS endpoint requests go to, as
	// https://sqs.us-east-1.amazonaws.com.
	Upstream string
	// Region signs the forwarded requests; if empty it is read from an
	// upstream host sqs.<region>.amazonaws.com.
	Region string
	// Credentials sign the forwarded requests.
	Credentials aws.CredentialsProvider
	// Verifier, if set, checks each client's SigV4 signature before the
	// request is forwarded, as `baton serve` does; without it any
	// signature, or none, is forwarded.
	Verifier *sigv4.Verifier
	// Clock is when leases begin and end, and the signing time. Defaults
	// to the system clock.
	Clock clock.Clock
	// MaxLeases bounds the leases (receipt handles) tracked at once; the
	// oldest is forgotten, and counted, when it is reached. Defaults to
	// DefaultMaxLeases.
	MaxLeases int
	// AdvertiseURL, if set, is the scheme://host[:port] the queue URLs
	// handed to clients start with; by default, the ones each request was
	// sent to, as on `baton serve` (urls.go).
	AdvertiseURL string
	// UpstreamTimeout bounds one exchange with the upstream. Defaults to
	// DefaultUpstreamTimeout.
	UpstreamTimeout time.Duration
	// HTTPClient sends the forwarded requests. Defaults to a client of
	// its own.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Proxy is an http.Handler serving the SQS API by forwarding, and the lease
// report of what it forwarded.
type Proxy struct {
	upstream *url.URL
	// advertise is Config.AdvertiseURL without a trailing slash; origins,
	// the scheme and host the upstream's answers named its queues under
	// (urls.go).
	advertise string
	origins   origins
	region    string
	creds     aws.CredentialsProvider
	verifier  *sigv4.Verifier
	clock     clock.Clock
	client    *http.Client
	signer    *v4.Signer
	timeout   time.Duration
	log       *slog.Logger
	ledger    *ledger.Ledger
	started   time.Time
	leftLogs  *lograte.Paced // clientLeft's and answerLost's lines

	metricsOnce sync.Once
	metrics     http.Handler
	// admin serves the admin API, /metrics and the dashboard; closing
	// ends their live streams (Close).
	admin   http.Handler
	closing chan struct{}
	// bounded is serve with every write of its answers bounded.
	bounded   http.Handler
	closeOnce sync.Once

	mu     sync.Mutex
	leases *leaseTable
	queues map[string]*queueInfo // by queue URL
	byName map[string]*queueInfo
	nextID uint64
	down   outage // outage.go
}

// New returns a proxy for cfg.Upstream.
func New(cfg Config) (*Proxy, error) {
	u, err := url.Parse(cfg.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream %q: want an http or https URL", cfg.Upstream)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	region := cfg.Region
	if region == "" {
		region = RegionOf(u.Hostname())
		if region == "" {
			return nil, fmt.Errorf("upstream %q: no region in its host name; give one", cfg.Upstream)
		}
	}
	if cfg.Credentials == nil {
		return nil, fmt.Errorf("no credentials to sign the forwarded requests with")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.MaxLeases <= 0 {
		cfg.MaxLeases = DefaultMaxLeases
	}
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if cfg.HTTPClient == nil {
		// Each exchange is bounded by UpstreamTimeout (send).
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second,
		}}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	now := cfg.Clock.Now()
	p := &Proxy{
		upstream: u, advertise: strings.TrimRight(cfg.AdvertiseURL, "/"), region: region, creds: cfg.Credentials, verifier: cfg.Verifier, clock: cfg.Clock,
		client: cfg.HTTPClient, signer: v4.NewSigner(), timeout: cfg.UpstreamTimeout, log: cfg.Logger,
		ledger:  ledger.New(ledger.Config{Clock: cfg.Clock, Started: now, Logger: cfg.Logger}),
		started: now, leases: newLeaseTable(cfg.MaxLeases), leftLogs: lograte.NewPaced(cfg.Clock, leftLogEvery),
		queues: make(map[string]*queueInfo), byName: make(map[string]*queueInfo),
		closing: make(chan struct{}),
	}
	p.admin = p.adminHandler()
	p.bounded = answered.Handler(http.HandlerFunc(p.serve))
	return p, nil
}

// Close ends the dashboard's live streams, so that a server shutting down
// does not wait for them, and says the counts of the client-left lines
// held back (lograte.Paced). The proxy goes on forwarding.
func (p *Proxy) Close() {
	p.closeOnce.Do(func() {
		close(p.closing)
		p.leftLogs.Close()
	})
}

// RegionOf returns the region of an SQS host name sqs.<region>.amazonaws.com
// (or .amazonaws.com.cn), "" for any other host. (Service endpoints:
// https://docs.aws.amazon.com/general/latest/gr/sqs-service.html)
func RegionOf(host string) string {
	parts := strings.Split(host, ".")
	if len(parts) >= 4 && parts[0] == "sqs" && parts[2] == "amazonaws" {
		return parts[1]
	}
	return ""
}

// Ledger returns the proxy's lease ledger.
func (p *Proxy) Ledger() *ledger.Ledger { return p.ledger }

// ServeHTTP serves the admin API's lease endpoints, /metrics and the
// dashboard's lease pages, and forwards everything else, every write of
// every answer bounded as the server's are (answered.Handler).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.bounded.ServeHTTP(w, r)
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	defer func() {
		// A bug must cost one request an SQS error, never the process.
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			p.log.Error("proxy: request failed", "panic", v)
			p.fail(w, r, baton.Errorf(baton.ErrInternal, "The proxy failed to handle the request."))
		}
	}()
	if (r.Method == http.MethodGet && (strings.HasPrefix(r.URL.Path, "/admin/api/") || r.URL.Path == "/metrics")) || dashboard.IsPageRequest(r) {
		p.admin.ServeHTTP(w, r)
		return
	}
	if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		p.serveHealth(r.Context(), w) // outage.go
		return
	}
	p.forward(w, r)
}

// fail answers an error of the proxy's own in the protocol of r.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, e *baton.Error) {
	if _, ok := awsjson.Operation(r); ok {
		awsjson.WriteError(w, e)
		return
	}
	id := newRequestID()
	w.Header().Set("x-amzn-RequestId", id)
	if awsquery.WantsJSON(r) {
		awsquery.WriteErrorJSON(w, e, id)
		return
	}
	awsquery.WriteError(w, e, id)
}

// forward sends r upstream, re-signed and with its queue URL the
// upstream's, observes it and its answer, and answers the upstream's
// response with the queue URLs it hands out naming the proxy.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
	if err != nil {
		p.fail(w, r, baton.Errorf(baton.ErrSerialization, "The request body could not be read."))
		return
	}
	if len(body) > maxRequest {
		p.fail(w, r, baton.Errorf(baton.ErrRequestEntityTooLarge, "Request entity too large."))
		return
	}
	if p.verifier != nil {
		if _, err := p.verifier.Verify(r, body); err != nil {
			p.fail(w, r, baton.AsError(err))
			return
		}
	}
	base := p.clientBase(r)
	out := p.upstreamRequest(r, body) // urls.go
	call := parseCall(r, out)
	if call != nil && strings.HasPrefix(call.queueURL, "/") {
		call.queueURL = p.queueOrigin(call.queueURL) + call.queueURL
	}
	if call != nil {
		call.sent = p.clock.Now()
	}
	// The exchange is not the client's to cut short: an answer already
	// made upstream has leased its messages whether or not the client is
	// still there (and SQS has been seen to lease messages to a long poll
	// whose client had left), so the proxy reads the answer to its end,
	// bounded by p.timeout, and sees the leases it hands out.
	status, header, answer, err := p.send(context.WithoutCancel(r.Context()), r.Method, r.URL.Path, out.rawQuery, r.Header, out.body)
	if err != nil {
		p.upstreamFailed(w, r, call, err)
		return
	}
	leased := 0
	var handed *ledger.Answer // the leases handed to the client in the answer
	if call != nil {
		if out.action == "ReceiveMessage" {
			var ctx context.Context
			ctx, handed = ledger.WithAnswer(r.Context())
			r = r.WithContext(ctx)
		}
		leased = p.observe(r, call, status, header, answer)
	}
	if r.Context().Err() != nil {
		p.clientLeft(r, out.action, status, leased)
	}
	answer = p.clientAnswer(out.action, base, status, header, answer)
	for k, vs := range header {
		if hopByHop[http.CanonicalHeaderKey(k)] {
			continue
		}
		w.Header()[k] = vs
	}
	write := func(w http.ResponseWriter) {
		w.WriteHeader(status)
		w.Write(answer)
	}
	// Within answered.Write's bound, whatever the answer: a client that
	// stopped reading holds it seconds, not until TCP gives up. A
	// receive's client is seen once its answer went out (observeReceive).
	err = answered.WriteThen(r.Context(), w, write, func() { p.ledger.AnswerWent(handed) })
	if err != nil && handed.Leases() > 0 {
		p.answerLost(r, p.ledger.AnswerLost(handed), err)
	}
}

// answerLost logs a receive's answer that leased messages and reached no
// client as it was written (its client leaving, the write failing), after
// the proxy had recorded its leases as the client's: they are held by no
// one (ledger.Event.ClientLeft), and the ledger is told. A warning, at
// most one a leftLogEvery per client, as clientLeft's.
func (p *Proxy) answerLost(r *http.Request, leased int, err error) {
	const msg = "proxy: a receive's answer reached no client as it was written; the leases it handed out are held by no one and lapse"
	p.noteLeft(r, "ReceiveMessage written", msg, "client", r.RemoteAddr, "leased", leased, "err", err)
}

// noteLeft logs msg with attrs for r's client, that left, unless a line of
// the client's of kind was logged within leftLogEvery; the line says how
// many of its kind were held back since the one before, and so does a line
// of its own once the interval has passed with none written, naming only
// the client's address and the kind (lograte.Paced): a client that left a
// few times and then went away is not left uncounted.
func (p *Proxy) noteLeft(r *http.Request, kind, msg string, attrs ...any) {
	addr := clientOf(r).Addr
	p.leftLogs.Note(addr+" "+kind, func(held int, since time.Time) {
		p.log.Warn(msg, append(attrs, heldBack(held, since)...)...)
	}, func(held int, since time.Time) {
		p.log.Warn(msg, append([]any{"client_addr", addr, "kind", kind}, heldBack(held, since)...)...)
	})
}

// heldBack are the attributes of a line of noteLeft that counts the lines
// of its kind held back since the one before, written at since.
func heldBack(held int, since time.Time) []any {
	if held == 0 {
		return []any{"held_back", 0}
	}
	return []any{"held_back", held, "since", since.UTC().Format(time.RFC3339)}
}

// clientLeft logs a request whose client left before the upstream
// answered: the answer is lost to it, and what the upstream did is counted
// as done. An empty receive lost nothing, and a client whose HTTP read
// timeout is shorter than its long poll cuts one at every poll, so only
// at debug level; the others, the leases of a receive that messages then
// wait out (ledger.Event.ClientLeft), a send or delete whose outcome the
// client never learnt, are a warning, at most one a leftLogEvery per
// client and action, saying how many were held back.
func (p *Proxy) clientLeft(r *http.Request, action string, status, leased int) {
	attrs := []any{"action", action, "status", status, "client", r.RemoteAddr}
	if action == "ReceiveMessage" && leased == 0 {
		p.log.Debug("proxy: the client left before the upstream answered; the answer leased nothing", attrs...)
		return
	}
	if action == "ReceiveMessage" {
		attrs = append(attrs, "leased", leased)
	}
	p.noteLeft(r, action, "proxy: the client left before the upstream answered; the answer is lost to it, and what the upstream did is counted as done "+
		"(leases it handed out are held by no one and lapse: the client's HTTP read timeout may be shorter than its WaitTimeSeconds)",
		attrs...)
}

// upstreamFailed answers a request the upstream gave no answer to, as err
// says: one never sent (its connection refused, or the proxy's own
// credentials failing) did nothing upstream; one sent whose answer was
// cut, late or too large may have been done, and a delete or visibility
// change of it is read as one answered with a server fault (observe): its
// outcome is not known.
func (p *Proxy) upstreamFailed(w http.ResponseWriter, r *http.Request, c *call, err error) {
	var ne *notSentError
	if errors.As(err, &ne) {
		p.log.Warn("proxy: could not send the request upstream", "err", err)
		p.fail(w, r, baton.Errorf(baton.ErrServiceUnavailable, "The proxy could not reach the upstream SQS endpoint."))
		return
	}
	p.log.Warn("proxy: the upstream's answer was lost", "err", err)
	if c != nil {
		p.observe(r, c, 0, nil, nil)
	}
	p.fail(w, r, baton.Errorf(baton.ErrServiceUnavailable,
		"The proxy sent the request to the upstream SQS endpoint but got no whole answer; whether it was done is not known."))
}

// notSentError is a request that never reached the upstream.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// hopByHop are the headers that describe one connection, not the answer,
// and Content-Length, which the proxy's server sets itself.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Content-Length": true,
}

// forwarded are the request headers that go upstream: what selects the
// protocol and the answer's form, and why a visibility change is made
// (baton.RenewalHeader, which SQS ignores). Authentication headers are the
// proxy's.
var forwarded = []string{"Content-Type", "X-Amz-Target", "Accept", "X-Amzn-Query-Mode", "User-Agent", baton.RenewalHeader}

// send makes one request upstream, signed with the proxy's credentials,
// and returns its answer.
func (p *Proxy) send(ctx context.Context, method, path, rawQuery string, in http.Header, body []byte) (int, http.Header, []byte, error) {
	status, header, answer, err := p.exchange(ctx, method, path, rawQuery, in, body)
	p.sawUpstream(ctx, status, header, answer, err) // outage.go
	return status, header, answer, err
}

// exchange is send's request and answer.
func (p *Proxy) exchange(ctx context.Context, method, path, rawQuery string, in http.Header, body []byte) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	u := *p.upstream
	u.Path = p.upstream.Path + path
	u.RawPath = ""
	u.RawQuery = rawQuery
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for _, h := range forwarded {
		if v := in.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	creds, err := p.creds.Retrieve(ctx)
	if err != nil {
		return 0, nil, nil, &notSentError{fmt.Errorf("credentials: %w", err)}
	}
	sum := sha256.Sum256(body)
	if err := p.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "sqs", p.region, p.clock.Now()); err != nil {
		return 0, nil, nil, &notSentError{fmt.Errorf("sign: %w", err)}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			err = &notSentError{err}
		}
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return 0, nil, nil, err
	}
	if len(answer) > maxAnswer {
		return 0, nil, nil, fmt.Errorf("the answer is larger than %d bytes", maxAnswer)
	}
	return resp.StatusCode, resp.Header, answer, nil
}

// clientOf is who sent r, for lease histories.
func clientOf(r *http.Request) ledger.Client {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return ledger.Client{Addr: host, UserAgent: r.UserAgent()}
}
