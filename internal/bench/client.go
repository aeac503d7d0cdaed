package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Client sends SQS JSON 1.0 requests to one endpoint over keep-alive
// connections, straight through an http.Transport (no redirects, cookies or
// retries). It is safe for concurrent use; each worker sends through its own
// Caller, which reuses its header map and buffers.
type Client struct {
	url       *url.URL
	transport *http.Transport
	signer    *signer
	now       func() time.Time
}

// ClientConfig configures a Client.
type ClientConfig struct {
	// Endpoint is the server's URL, http://host:port.
	Endpoint string
	// Region is the region requests are signed for (us-east-1 if empty).
	Region string
	// Credentials, if set, sign every request (SigV4); without them requests
	// carry a placeholder Authorization header.
	Credentials *Credentials
	// Conns is how many connections the client keeps open to the server:
	// at least the number of concurrent requests.
	Conns int
	// NowFunc reads the time requests are signed at (time.Now if nil).
	NowFunc func() time.Time
}

// NewClient returns a Client for cfg.Endpoint. It fails if the endpoint is
// not an http or https URL.
func NewClient(cfg ClientConfig) (*Client, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", cfg.Endpoint, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q: want http://host:port or https://host:port", cfg.Endpoint)
	}
	u.RawQuery, u.Fragment = "", ""
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	conns := max(cfg.Conns, 1) + 4
	t := &http.Transport{
		Proxy: nil, // a benchmark measures the server, not a proxy
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     32 << 10,
		ReadBufferSize:      32 << 10,
	}
	return &Client{
		url:       u,
		transport: t,
		signer:    newSigner(cfg.Credentials, cfg.Region, u),
		now:       cfg.NowFunc,
	}, nil
}

// Endpoint returns the endpoint's URL as the client sends to it.
func (c *Client) Endpoint() string { return c.url.String() }

// Close closes the client's idle connections.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// Request is one action's body, built once and sent as often as wanted:
// its payload hash is computed once, and its date and Authorization header
// once per second (and endpoint), whoever sends it.
type Request struct {
	action string
	// query marks an SNS Query request (NewQueryRequest): a form body,
	// no X-Amz-Target, signed for the service sns.
	query  bool
	target []string
	body   []byte
	hash   string
	auth   atomic.Pointer[signedAt]
	// getBody is the request's http.Request.GetBody.
	getBody func() (io.ReadCloser, error)
}

// signedAt is a request's X-Amz-Date and Authorization values for one second
// and one client: the signature covers the client's host.
type signedAt struct {
	c    *Client
	sec  int64
	date []string
	auth []string
}

// NewRequest returns a request of action (SendMessage, …) with body, a
// JSON object. The client's signer decides whether the payload hash is
// needed.
func (c *Client) NewRequest(action string, body []byte) *Request {
	r := &Request{action: action, target: []string{targetPrefix + action}, body: body}
	r.getBody = func() (io.ReadCloser, error) { return newBody(body), nil }
	if c.signer.creds != nil {
		r.hash = payloadHash(body)
	}
	return r
}

// Action returns the request's action name.
func (r *Request) Action() string { return r.action }

// Body returns the request's body; it must not be modified.
func (r *Request) Body() []byte { return r.body }

// signed returns r's date and Authorization header values at t.
func (c *Client) signed(r *Request, t time.Time) (*signedAt, error) {
	sec := t.Unix()
	if s := r.auth.Load(); s != nil && s.sec == sec && s.c == c {
		return s, nil
	}
	date, auth, err := c.signer.sign(t, r.target, r.hash)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", r.action, err)
	}
	s := &signedAt{c: c, sec: sec, date: []string{date}, auth: []string{auth}}
	r.auth.Store(s)
	return s, nil
}

// APIError is an error response from the server.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the SQS error code: the x-amzn-query-error header's code, else
	// the __type's shape name, else "HTTP <status>".
	Code    string
	Message string
}

func (e *APIError) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// Caller sends requests for one worker, one at a time, reusing its header
// map and response buffer. It is not safe for concurrent use.
type Caller struct {
	c      *Client
	header http.Header
	tmpl   *http.Request
	buf    bytes.Buffer
}

// bodyReader is a request body: a reader over bytes that never change, so
// the transport may rewind it to send the request again.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

func newBody(b []byte) *bodyReader {
	r := &bodyReader{}
	r.Reset(b)
	return r
}

// NewCaller returns a Caller of the client.
func (c *Client) NewCaller() *Caller {
	k := &Caller{c: c}
	k.newHeader()
	return k
}

// newHeader gives the caller a header map and request template of its own.
// The transport reads a request's header while it sends it, so after a
// failure, when it may still be at it, the caller starts a new map.
func (k *Caller) newHeader() {
	k.header = http.Header{
		"Content-Type": jsonContentType,
		"User-Agent":   {"baton-bench"},
	}
	if creds := k.c.signer.creds; creds != nil && creds.SessionToken != "" {
		k.header["X-Amz-Security-Token"] = []string{creds.SessionToken}
	}
	k.tmpl = &http.Request{
		Method:     http.MethodPost,
		URL:        k.c.url,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     k.header,
		Host:       k.c.url.Host,
	}
}

// Do sends r and returns the body of a 200 response, valid until the next
// call, or an *APIError for an error response, or the transport's error.
func (k *Caller) Do(ctx context.Context, r *Request) ([]byte, error) {
	body, _, err := k.do(ctx, r)
	return body, err
}

// do is Do that also returns when the request was handed to the transport,
// after it was signed and its header set: the start of its latency.
func (k *Caller) do(ctx context.Context, r *Request) (_ []byte, start time.Time, _ error) {
	s, err := k.c.signed(r, k.c.now())
	if err != nil {
		return nil, time.Time{}, err
	}
	if r.query {
		k.header["Content-Type"] = queryContentType
		delete(k.header, "X-Amz-Target")
	} else {
		k.header["Content-Type"] = jsonContentType
		k.header["X-Amz-Target"] = r.target
	}
	k.header["X-Amz-Date"] = s.date
	k.header["Authorization"] = s.auth
	req := k.tmpl.WithContext(ctx)
	req.Body = newBody(r.body)
	req.GetBody = r.getBody
	req.ContentLength = int64(len(r.body))
	start = time.Now()
	resp, err := k.c.transport.RoundTrip(req)
	if err != nil {
		k.newHeader()
		return nil, start, err
	}
	k.buf.Reset()
	_, err = k.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, start, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, start, apiError(resp, k.buf.Bytes())
	}
	return k.buf.Bytes(), start, nil
}

// apiError reads an SQS JSON error response, or an SNS Query one (XML).
func apiError(resp *http.Response, body []byte) *APIError {
	e := &APIError{Status: resp.StatusCode}
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) {
		e.Code, e.Message = xmlElement(body, "Code"), xmlElement(body, "Message")
	}
	var b struct {
		Type     string `json:"__type"`
		Message  string `json:"message"`
		Message2 string `json:"Message"`
	}
	if json.Unmarshal(body, &b) == nil {
		e.Message = b.Message
		if e.Message == "" {
			e.Message = b.Message2
		}
		if i := strings.LastIndexByte(b.Type, '#'); i >= 0 {
			e.Code = b.Type[i+1:]
		} else {
			e.Code = b.Type
		}
	}
	if q := resp.Header.Get("x-amzn-query-error"); q != "" {
		e.Code, _, _ = strings.Cut(q, ";")
	}
	if e.Code == "" {
		e.Code = fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return e
}

// errorCode names an error for the report's error table.
func errorCode(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "transport: timeout"
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		if oe.Err != nil {
			return "transport: " + oe.Op + ": " + oe.Err.Error()
		}
		return "transport: " + oe.Op
	}
	return "transport: " + err.Error()
}
