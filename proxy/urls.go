package proxy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/baton-sqs/baton/protocol/awsjson"
)

// The queue URLs the proxy hands out name the proxy, not the upstream:
// several SDKs send a queue's requests to its queue URL's host rather
// than to the endpoint they were given (the AWS SDK for JavaScript v3 by
// default, useQueueUrlAsEndpoint; the SDKs for Ruby and PHP), and a queue
// URL of the upstream would take such a client around the proxy after its
// first call. The answers that hand out queue URLs have them rewritten to
// the base the client called (or Config.AdvertiseURL), as `baton serve`
// builds its own; a request's QueueUrl naming the proxy is mapped back to
// the upstream's before it is forwarded. A queue URL of the upstream given
// to the proxy passes as it is.

// urlAnswers are the actions whose answers hand out queue URLs.
var urlAnswers = map[string]bool{
	"CreateQueue": true, "GetQueueUrl": true, "ListQueues": true, "ListDeadLetterSourceQueues": true,
}

// clientBase is the scheme and host the queue URLs handed to r's client
// start with: Config.AdvertiseURL, else the ones r was sent to.
func (p *Proxy) clientBase(r *http.Request) string {
	if p.advertise != "" {
		return p.advertise
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// maxOrigins bounds the queue paths whose origin the proxy remembers
// (origins).
const maxOrigins = 100000

// origins are the scheme and host the upstream's answers named each queue
// under, by the queue URL's path, when not the upstream's own: an upstream
// may name queues under several hosts (sqs.us-east-1.amazonaws.com and
// queue.amazonaws.com), so a queue URL naming the proxy goes back to the
// one its own queue was named under, not to the one the last answer named.
type origins struct {
	mu     sync.Mutex
	byPath map[string]string
}

// queueOrigin is the scheme and host of the upstream's queue URL whose
// path is path: as its answers named it, else the upstream's own.
func (p *Proxy) queueOrigin(path string) string {
	p.origins.mu.Lock()
	o, ok := p.origins.byPath[path]
	p.origins.mu.Unlock()
	if ok {
		return o
	}
	return p.upstream.Scheme + "://" + p.upstream.Host
}

// sawOrigin remembers that the upstream named the queue at path under
// origin.
func (p *Proxy) sawOrigin(path, origin string) {
	own := strings.EqualFold(origin, p.upstream.Scheme+"://"+p.upstream.Host)
	p.origins.mu.Lock()
	defer p.origins.mu.Unlock()
	if own {
		delete(p.origins.byPath, path)
		return
	}
	if p.origins.byPath[path] == origin {
		return
	}
	if p.origins.byPath == nil {
		p.origins.byPath = make(map[string]string)
	}
	if _, known := p.origins.byPath[path]; !known && len(p.origins.byPath) >= maxOrigins {
		for old := range p.origins.byPath {
			p.log.Warn("proxy: too many queue origins to remember; its queue URLs naming the proxy now go to the upstream's own host",
				"queue", p.origins.byPath[old]+old, "max", maxOrigins)
			delete(p.origins.byPath, old)
			break
		}
	}
	p.origins.byPath[path] = origin
}

// isProxyHost says whether a queue URL's host names the proxy for r: the
// host r was sent to, or Config.AdvertiseURL's.
func (p *Proxy) isProxyHost(r *http.Request, host string) bool {
	if strings.EqualFold(host, r.Host) {
		return true
	}
	if p.advertise != "" {
		if u, err := url.Parse(p.advertise); err == nil && strings.EqualFold(host, u.Host) {
			return true
		}
	}
	return false
}

// upstreamQueueURL maps a queue URL naming the proxy to the upstream's;
// any other passes unchanged.
func (p *Proxy) upstreamQueueURL(r *http.Request, queueURL string) string {
	u, err := url.Parse(queueURL)
	if err != nil || u.Host == "" || !p.isProxyHost(r, u.Host) {
		return queueURL
	}
	return p.queueOrigin(u.EscapedPath()) + u.EscapedPath()
}

// clientQueueURL maps a queue URL of the upstream's answer to the one the
// client gets, on base, and remembers its origin (sawOrigin).
func (p *Proxy) clientQueueURL(base, queueURL string) string {
	u, err := url.Parse(queueURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return queueURL
	}
	p.sawOrigin(u.EscapedPath(), u.Scheme+"://"+u.Host)
	return base + u.EscapedPath()
}

// outgoing is a client's request as the proxy forwards it, read once:
// its body and query string, with a QueueUrl naming the proxy mapped to
// the upstream's and a presigned URL's signature left out, its action,
// and, of the Query protocol, its parameters.
type outgoing struct {
	body     []byte
	rawQuery string
	action   string
	// json: the request is the AWS JSON protocol's. Else form holds the
	// Query protocol's parameters as forwarded, the body's before the
	// query string's (as r.ParseForm orders them), and formErr says the
	// body is not a form that reads (the upstream then answers its error).
	json    bool
	form    url.Values
	formErr bool
}

// upstreamRequest reads r, whose body is body, as the proxy forwards it.
func (p *Proxy) upstreamRequest(r *http.Request, body []byte) *outgoing {
	mapURL := func(v string) string { return p.upstreamQueueURL(r, v) }
	if name, ok := awsjson.Operation(r); ok {
		q, _, _ := mapForm(r.URL.RawQuery, mapURL, true)
		return &outgoing{body: mapJSONQueueURL(body, mapURL), rawQuery: q, action: name, json: true}
	}
	out := &outgoing{body: body, form: url.Values{}}
	var query url.Values
	out.rawQuery, query, _ = mapForm(r.URL.RawQuery, mapURL, true)
	if isForm(r) {
		var (
			mapped string
			err    error
		)
		mapped, out.form, err = mapForm(string(body), mapURL, false)
		out.body, out.formErr = []byte(mapped), err != nil
	}
	for k, vs := range query {
		out.form[k] = append(out.form[k], vs...)
	}
	out.action = out.form.Get("Action")
	return out
}

// isForm says whether r's body is a form, as the Query protocol sends.
func isForm(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/x-www-form-urlencoded"
}

// mapForm reads a form (a body or a query string) as url.ParseQuery does,
// and returns it with its QueueUrl parameters mapped, and if presigned (a
// URL's query string) the signature parameters (X-Amz-…, which would make
// the upstream check the client's signature) left out, every other
// parameter's bytes as they came; with its parameters so, and
// ParseQuery's error.
func mapForm(form string, mapURL func(string) string, presigned bool) (string, url.Values, error) {
	values := url.Values{}
	var (
		parts   []string
		changed bool
		err     error
	)
	for rest := form; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, "&")
		if strings.Contains(part, ";") {
			err = cmp.Or(err, fmt.Errorf("invalid semicolon separator in query"))
			parts = append(parts, part)
			continue
		}
		if part == "" {
			parts = append(parts, part)
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		key, kerr := url.QueryUnescape(k)
		value, verr := url.QueryUnescape(v)
		if e := cmp.Or(kerr, verr); e != nil {
			err = cmp.Or(err, e)
			parts = append(parts, part)
			continue
		}
		if presigned && strings.HasPrefix(strings.ToLower(key), "x-amz-") {
			changed = true
			continue
		}
		if key == "QueueUrl" {
			if mapped := mapURL(value); mapped != value {
				value, part, changed = mapped, k+"="+url.QueryEscape(mapped), true
			}
		}
		values[key] = append(values[key], value)
		parts = append(parts, part)
	}
	if !changed {
		return form, values, err
	}
	return strings.Join(parts, "&"), values, err
}

// clientAnswer returns the upstream's answer to action with the queue
// URLs it hands out naming base instead: an answer of another action, or
// an error, is returned as it came.
func (p *Proxy) clientAnswer(action, base string, status int, header http.Header, body []byte) []byte {
	if !urlAnswers[action] || status != http.StatusOK {
		return body
	}
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if strings.Contains(mt, "xml") || bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) {
		return p.mapXMLQueueURLs(base, body)
	}
	return p.mapJSONQueueURLs(base, body)
}

// mapXMLQueueURLs rewrites the text of a Query answer's QueueUrl elements
// in place, the rest of the document unchanged.
func (p *Proxy) mapXMLQueueURLs(base string, body []byte) []byte {
	d := xml.NewDecoder(bytes.NewReader(body))
	var (
		out   bytes.Buffer
		done  int64 // bytes of body copied to out
		inURL bool
	)
	for {
		start := d.InputOffset()
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			inURL = t.Name.Local == "QueueUrl"
		case xml.EndElement:
			inURL = false
		case xml.CharData:
			if !inURL {
				continue
			}
			mapped := p.clientQueueURL(base, strings.TrimSpace(string(t)))
			out.Write(body[done:start])
			xml.EscapeText(&out, []byte(mapped))
			done = d.InputOffset()
		}
	}
	if done == 0 {
		return body
	}
	out.Write(body[done:])
	return out.Bytes()
}

// mapJSONQueueURLs rewrites the queue URLs of a JSON answer (the members
// QueueUrl and QueueUrls, in any case, of the AWS JSON protocol's answer
// or of the Query protocol's JSON form), however spelt, the rest of the
// document unchanged (answerSpans).
func (p *Proxy) mapJSONQueueURLs(base string, body []byte) []byte {
	spans, ok := answerSpans(body)
	if !ok {
		return body
	}
	return replaceStrings(body, spans, func(u string) string { return p.clientQueueURL(base, u) })
}

// jsonString is s as a JSON string, without HTML escaping.
func jsonString(s string) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
