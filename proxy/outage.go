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
	// probed is when the proxy last asked the upstream itself
	// (probeUpstream).
	probed time.Time
}

// sawUpstream records an exchange with the upstream: its answer, or err.
// An exchange given up on the proxy's side (ctx done before the answer: a
// read of the proxy's own whose caller left) says nothing of the upstream;
// a client's request is never given up so (forward).
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
		if p.down.count > 0 {
			p.log.Info("proxy: the upstream answers again", "since", p.down.since, "failed", p.down.count)
		}
		p.down = outage{}
	case ctx.Err() != nil:
	default:
		if p.down.count == 0 {
			p.down.since = p.clock.Now()
			// Its clients see the upstream's error as it came (a refusal
			// of the proxy's credentials reads as one of theirs): the
			// operator learns whose it is here.
			p.log.Warn("proxy: the upstream gives no answer but server faults or refusals of the proxy's own credentials; no lease report until it answers again",
				"err", err)
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

// upstreamDownNow is upstreamDown for what reads the outage (/healthz,
// the lease report, the dashboard's queue view): while the traffic says
// the upstream is down, it first asks the upstream itself
// (probeUpstream), so that an upstream back while no request passes is
// known to be back.
func (p *Proxy) upstreamDownNow(ctx context.Context) string {
	if p.upstreamDown() != "" {
		p.probeUpstream(ctx)
	}
	return p.upstreamDown()
}

// serveHealth answers /healthz itself, never forwarding it (an upstream on
// AWS has no such path): 503 saying why while the upstream gives no answer
// (upstreamDown), as `baton serve` fails its /healthz while its store
// cannot do its work; else 200. It knows the upstream from the traffic,
// and while that says the upstream is down, from a request of its own
// (probeUpstream).
func (p *Proxy) serveHealth(ctx context.Context, w http.ResponseWriter) {
	why := p.upstreamDownNow(ctx)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if why != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, why)
		return
	}
	fmt.Fprintln(w, "ok: no exchange with the upstream has failed since its last answer")
}

// healthProbeEvery bounds how often the proxy asks the upstream itself, and
// healthProbeTimeout how long it waits for the answer.
const (
	healthProbeEvery   = 5 * time.Second
	healthProbeTimeout = 5 * time.Second
)

// probeUpstream asks the upstream, while it gives no answer, whether it
// answers again: one ListQueues of at most one queue, signed as the
// forwarded requests are, at most once each healthProbeEvery. Without it a
// proxy taken out of service by its failing /healthz (a readiness check),
// or one no consumer uses for now, would see no traffic, and never learn
// that the upstream is back. Any
// answer but a server fault or a refusal of the proxy's credentials ends
// the outage (sawUpstream), an AccessDenied included: the upstream answers.
func (p *Proxy) probeUpstream(ctx context.Context) {
	now := p.clock.Now()
	p.mu.Lock()
	if !p.down.probed.IsZero() && now.Sub(p.down.probed) < healthProbeEvery {
		p.mu.Unlock()
		return
	}
	p.down.probed = now
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, healthProbeTimeout)
	defer cancel()
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	p.send(ctx, http.MethodPost, "/", "", h, []byte("Action=ListQueues&MaxResults=1&Version=2012-11-05"))
}
