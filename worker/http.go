package worker

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/baton-sqs/baton/consumer"
)

// HTTPTarget delivers to an HTTP endpoint: a POST of the event as JSON,
// or, with PerMessage, one POST per message like Elastic Beanstalk's sqsd.
type HTTPTarget struct {
	// URL is the endpoint (http or https). Required.
	URL string
	// PerMessage posts each message on its own: its body as the request
	// body, its metadata in sqsd's X-Aws-Sqsd-* headers.
	PerMessage bool
	// ContentType is a per-message request's Content-Type (default
	// application/json, as sqsd's). Events are always application/json.
	ContentType string
	// Header is added to every request (an Authorization token, say). A
	// Host header sets the request's Host (to reach a virtual host through
	// an ingress or a proxy by name). Content-Type, User-Agent,
	// Content-Length and Transfer-Encoding are refused (New fails): the
	// worker sets them itself (Content-Type with ContentType).
	Header http.Header
	// Client sends the requests (default: one of the worker's own, keeping
	// a connection per concurrent delivery, without a timeout of its own:
	// Config.TargetTimeout bounds each request with its answer). The worker
	// uses a copy of it whose CheckRedirect follows no redirect: a 3xx
	// answer fails the delivery, since following it would turn the POST
	// into a GET without the event (and could carry Header to another
	// host).
	Client *http.Client
}

// userAgent starts with sqsd's, for applications that look for it.
const userAgent = "aws-sqsd (compatible; baton worker)"

// String describes the target, the URL's password redacted: it goes to
// logs and to `baton worker --check`.
func (t *HTTPTarget) String() string {
	if t.PerMessage {
		return "POST " + redactURL(t.URL) + " (one message per request)"
	}
	return "POST " + redactURL(t.URL)
}

// redactURL is raw with its password replaced by "xxxxx" (url.URL's
// Redacted); if raw does not parse, whatever stands between "://" and the
// host's last "@" is replaced.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	authority := raw[i+3:]
	if j := strings.IndexAny(authority, "/?#"); j >= 0 {
		authority = authority[:j]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return raw
	}
	return raw[:i+3] + "xxxxx" + raw[i+3+at:]
}

// ownHeaders are the request headers the worker sets itself (or Go
// computes), which HTTPTarget.Header may not name.
var ownHeaders = map[string]string{
	"Content-Type":      "the worker sends application/json (set ContentType, --content-type, for per-message requests)",
	"User-Agent":        "the worker sends " + userAgent,
	"Content-Length":    "it is computed from the body",
	"Transfer-Encoding": "it is computed from the body",
}

func (t *HTTPTarget) check() error {
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("worker: HTTP target %q: want an http:// or https:// URL", redactURL(t.URL))
	}
	for k, vs := range t.Header {
		name := http.CanonicalHeaderKey(k)
		if why, ok := ownHeaders[name]; ok {
			return fmt.Errorf("worker: HTTP target: header %s: not allowed: %s", name, why)
		}
		if name == "Host" && (len(vs) != 1 || vs[0] == "") {
			return fmt.Errorf("worker: HTTP target: header Host: want one host name, got %q", vs)
		}
	}
	return nil
}

// noRedirects is the CheckRedirect of the worker's HTTP clients: the 3xx
// answer is the result.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// client returns the client that sends t's requests: a copy of t.Client,
// or a new one keeping conns idle connections per host; neither follows
// redirects.
func (t *HTTPTarget) client(conns int) *http.Client {
	var c http.Client
	if t.Client != nil {
		c = *t.Client
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = conns
		c.Transport = tr
	}
	c.CheckRedirect = noRedirects
	return &c
}

// answer is an HTTP response as the worker reads it.
type answer struct {
	status   int
	header   http.Header
	body     []byte
	tooLarge bool
}

// post sends one request within the target timeout.
func (t *HTTPTarget) post(ctx context.Context, w *Worker, body []byte, contentType string, header http.Header) (answer, error) {
	ctx, stop := w.withTimeout(ctx, w.cfg.TargetTimeout, fmt.Errorf("%w after %v", ErrTargetTimeout, w.cfg.TargetTimeout))
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	for k, vs := range t.Header {
		if http.CanonicalHeaderKey(k) == "Host" {
			// Go sends Request.Host and ignores a Host header.
			req.Host = vs[0]
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", userAgent)
	resp, err := w.hc.Do(req)
	if err != nil {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			return answer{}, c
		}
		return answer{}, err
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	a.body, err = io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			return answer{}, c
		}
		return answer{}, fmt.Errorf("read the answer: %w", err)
	}
	if len(a.body) > maxResponse {
		a.body, a.tooLarge = nil, true
	}
	return a, nil
}

// throttled reads a 429 or 503 answer's Retry-After.
func (w *Worker) throttled(a answer) *throttle {
	if a.status != http.StatusTooManyRequests && a.status != http.StatusServiceUnavailable {
		return nil
	}
	th := &throttle{status: fmt.Sprintf("HTTP %d", a.status)}
	th.retryAfter, th.hinted = ParseRetryAfter(a.header.Get("Retry-After"), w.clock.Now())
	return th
}

// deliver posts a batch's event.
func (t *HTTPTarget) deliver(ctx context.Context, d *delivery) outcome {
	w := d.w
	return w.untilServed(ctx, d.leases, func(ctx context.Context) (outcome, *throttle) {
		a, err := t.post(ctx, w, d.event, "application/json", nil)
		if err != nil {
			return outcome{err: failed(err)}, nil
		}
		if th := w.throttled(a); th != nil {
			return outcome{}, th
		}
		if a.status < 200 || a.status > 299 {
			return outcome{err: statusError(a)}, nil
		}
		if !w.cfg.ReportBatchItemFailures {
			w.noteIgnoredFailures(a.body, d.inBatch)
			return outcome{}, nil
		}
		if a.tooLarge {
			return outcome{err: fmt.Errorf("%w: the answer is larger than %d bytes", ErrBadResponse, maxResponse)}, nil
		}
		ids, err := ParseBatchItemFailures(a.body, d.inBatch)
		if err != nil {
			return outcome{err: err}, nil
		}
		return outcome{failed: ids}, nil
	})
}

// deliverOne posts one message, sqsd style.
func (t *HTTPTarget) deliverOne(ctx context.Context, w *Worker, m *consumer.Delivery) error {
	ct := t.ContentType
	if ct == "" {
		ct = "application/json"
	}
	header := sqsdHeaders(m, w.q.name)
	body := []byte(m.Body())
	out := w.untilServed(ctx, []*consumer.Lease{m.Lease()}, func(ctx context.Context) (outcome, *throttle) {
		a, err := t.post(ctx, w, body, ct, header)
		if err != nil {
			return outcome{err: failed(err)}, nil
		}
		if th := w.throttled(a); th != nil {
			return outcome{}, th
		}
		if a.status < 200 || a.status > 299 {
			return outcome{err: statusError(a)}, nil
		}
		return outcome{}, nil
	})
	return out.err
}

// statusError is the failure of an answer other than 2xx.
func statusError(a answer) error {
	if a.status >= 300 && a.status <= 399 {
		return fmt.Errorf("%w: HTTP %d, a redirect to %q: the worker follows no redirects (set the target's URL to where it points)",
			ErrTargetFailed, a.status, redactURL(a.header.Get("Location")))
	}
	return fmt.Errorf("%w: HTTP %d%s", ErrTargetFailed, a.status, snippet(a.body))
}

// failed wraps a delivery error in ErrTargetFailed unless it is one of the
// worker's own causes or a cancellation.
func failed(err error) error {
	if errors.Is(err, ErrTargetTimeout) || errors.Is(err, context.Canceled) || isRuntimeCause(err) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrTargetFailed, err)
}

// isRuntimeCause reports whether err is a cause the consumer runtime
// cancels attempts with.
func isRuntimeCause(err error) bool {
	return errors.Is(err, consumer.ErrShutdown) || errors.Is(err, consumer.ErrLeaseLost) ||
		errors.Is(err, consumer.ErrStalled) || errors.Is(err, consumer.ErrAttemptTimeout)
}

// sqsdHeaders are the headers sqsd sends with a message.
func sqsdHeaders(m *consumer.Delivery, queue string) http.Header {
	h := http.Header{}
	h.Set("X-Aws-Sqsd-Msgid", deref(m.Message.MessageId))
	h.Set("X-Aws-Sqsd-Queue", queue)
	h.Set("X-Aws-Sqsd-Receive-Count", strconv.Itoa(m.ReceiveCount()))
	attrs := m.Message.Attributes
	if ts := isoMillis(attrs["ApproximateFirstReceiveTimestamp"]); ts != "" {
		h.Set("X-Aws-Sqsd-First-Received-At", ts)
	}
	if ts := isoMillis(attrs["SentTimestamp"]); ts != "" {
		h.Set("X-Aws-Sqsd-Sent-At", ts)
	}
	if v := attrs["SenderId"]; v != "" {
		h.Set("X-Aws-Sqsd-Sender-Id", v)
	}
	if v := attrs["MessageGroupId"]; v != "" {
		h.Set("X-Aws-Sqsd-Message-Group-Id", v)
	}
	for name, v := range m.Message.MessageAttributes {
		switch {
		case v.StringValue != nil:
			h.Set("X-Aws-Sqsd-Attr-"+name, headerSafe(*v.StringValue))
		case v.BinaryValue != nil:
			h.Set("X-Aws-Sqsd-Attr-"+name, base64.StdEncoding.EncodeToString(v.BinaryValue))
		}
	}
	return h
}

// headerSafe replaces the characters an HTTP header value cannot carry
// (control characters but tab) with spaces.
func headerSafe(v string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			return ' '
		}
		return r
	}, v)
}

// isoMillis renders epoch milliseconds as ISO 8601 UTC, or "".
func isoMillis(ms string) string {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return ""
	}
	return time.UnixMilli(n).UTC().Format(time.RFC3339)
}

// ParseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date (a date in the past means now). It reports false for an absent or
// unreadable value. Delays are capped at 12 hours.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		if n > uint64(consumer.MaxLease/time.Second) {
			return consumer.MaxLease, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	return min(max(d, 0), consumer.MaxLease), true
}

// snippet quotes the start of an answer body for error messages.
func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	if len(b) > 200 {
		return fmt.Sprintf(": %q…", b[:200])
	}
	return fmt.Sprintf(": %q", b)
}
