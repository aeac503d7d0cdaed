package proxy

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// outage is what the proxy knows of the upstream's failing to answer: the
// exchanges since the last one answered (a server fault, 5xx, is no
// answer, nor is a refusal of the proxy's own credentials, which refuses
// every request), when they began, and the last error. While the upstream gives
// no answer the proxy sees no lease begin or end, so it gives no lease
// report (adminLeases, viewQueue) rather than one judged on the traffic
// before.
type outage struct {
	since   time.Time
	count   int
	lastErr string
}

// sawUpstream records an exchange with the upstream: its answer, or err.
// A request its client gave up (ctx done before the answer) says nothing
// of the upstream.
func (p *Proxy) sawUpstream(ctx context.Context, status int, header http.Header, answer []byte, err error) {
	if err == nil && status >= 400 {
		if code := errorCode(header, answer); status >= 500 || credentialsRefused[code] {
			err = fmt.Errorf("answered %d %s", status, code)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		p.down = outage{}
	case ctx.Err() != nil:
	default:
		if p.down.count == 0 {
			p.down.since = p.clock.Now()
		}
		p.down.count++
		p.down.lastErr = err.Error()
	}
}

// credentialsRefused are the error codes of an upstream that refuses the
// proxy's own credentials (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/CommonErrors.html).
var credentialsRefused = map[string]bool{
	"InvalidClientTokenId": true, "SignatureDoesNotMatch": true, "ExpiredToken": true, "IncompleteSignature": true,
	"MissingAuthenticationToken": true, "UnrecognizedClientException": true,
}

// upstreamDown says why the proxy gives no lease report now, "" while the
// upstream's last exchange was answered.
func (p *Proxy) upstreamDown() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down.count == 0 {
		return ""
	}
	return fmt.Sprintf("The upstream SQS endpoint has given no answer but server faults or refusals of the proxy's credentials since %s (%d requests; the last: %s): "+
		"the proxy sees no lease begin or end meanwhile, so it gives no diagnosis until the upstream answers again.",
		p.down.since.UTC().Format(time.RFC3339), p.down.count, p.down.lastErr)
}

// serveHealth answers /healthz itself, never forwarding it (an upstream on
// AWS has no such path): 503 saying why while the upstream gives no answer
// (upstreamDown), as `baton serve` fails its /healthz while its store
// cannot do its work; else 200. It knows the upstream only from the
// traffic: it sends no request of its own to learn more.
func (p *Proxy) serveHealth(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if why := p.upstreamDown(); why != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, why)
		return
	}
	fmt.Fprintln(w, "ok: no exchange with the upstream has failed since its last answer (the proxy knows it from the traffic alone)")
}
