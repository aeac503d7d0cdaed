package proxy

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"mime"
	"net/http"
	"net/url"
	"strings"

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

// queueOrigin is the scheme and host of the upstream's queue URLs: as its
// answers last named them, else the upstream's own.
func (p *Proxy) queueOrigin() string {
	if o := p.origin.Load(); o != nil {
		return *o
	}
	return p.upstream.Scheme + "://" + p.upstream.Host
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
	return p.queueOrigin() + u.EscapedPath()
}

// clientQueueURL maps a queue URL of the upstream's answer to the one the
// client gets, on base, and remembers the upstream's origin.
func (p *Proxy) clientQueueURL(base, queueURL string) string {
	u, err := url.Parse(queueURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return queueURL
	}
	origin := u.Scheme + "://" + u.Host
	if o := p.origin.Load(); o == nil || *o != origin {
		p.origin.Store(&origin)
	}
	return base + u.EscapedPath()
}

// upstreamRequest returns the body and query string of r to forward, with
// a QueueUrl that names the proxy mapped to the upstream's, and r's
// action.
func (p *Proxy) upstreamRequest(r *http.Request, body []byte) (out []byte, rawQuery, action string) {
	mapURL := func(v string) string { return p.upstreamQueueURL(r, v) }
	if name, ok := awsjson.Operation(r); ok {
		return mapJSONQueueURL(body, mapURL), r.URL.RawQuery, name
	}
	rawQuery = mapFormQueueURL(r.URL.RawQuery, mapURL)
	out = body
	if isForm(r) {
		out = []byte(mapFormQueueURL(string(body), mapURL))
	}
	form, _ := url.ParseQuery(rawQuery)
	if isForm(r) {
		f, _ := url.ParseQuery(string(out))
		for k, v := range f {
			form[k] = v
		}
	}
	return out, rawQuery, form.Get("Action")
}

// isForm says whether r's body is a form, as the Query protocol sends.
func isForm(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/x-www-form-urlencoded"
}

// mapJSONQueueURL maps the top-level QueueUrl member of a JSON request in
// place, the rest of the body's bytes as they came; a body that names no
// queue the mapping changes is returned as it came. A message body of
// 1 MiB is not decoded for it: the member is found by its key, and only
// the bytes before it are scanned, for its depth.
func mapJSONQueueURL(body []byte, mapURL func(string) string) []byte {
	key := []byte(`"QueueUrl"`)
	for from := 0; ; {
		i := bytes.Index(body[from:], key)
		if i < 0 {
			return body
		}
		i += from
		from = i + len(key)
		// A quote inside a JSON string is escaped, so the key's bytes
		// are a member's name; of the top-level object if the bytes
		// before it leave the depth at one.
		if jsonDepth(body[:i]) != 1 {
			continue
		}
		rest := bytes.TrimLeft(body[from:], " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		rest = bytes.TrimLeft(rest[1:], " \t\r\n")
		valueAt := len(body) - len(rest)
		var queueURL string
		d := json.NewDecoder(bytes.NewReader(rest))
		if len(rest) == 0 || rest[0] != '"' || d.Decode(&queueURL) != nil {
			return body
		}
		mapped := mapURL(queueURL)
		if mapped == queueURL {
			return body
		}
		valueEnd := valueAt + int(d.InputOffset())
		out := make([]byte, 0, len(body)+len(mapped))
		out = append(out, body[:valueAt]...)
		out = append(out, jsonString(mapped)...)
		return append(out, body[valueEnd:]...)
	}
}

// jsonDepth is the nesting depth of objects and arrays at the end of a
// JSON document's prefix b, outside strings. A string's end is found with
// bytes.IndexByte, so a long message body costs little.
func jsonDepth(b []byte) int {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(b, i+1)
			if end < 0 {
				return -1 // the prefix ends inside a string
			}
			i = end
		}
	}
	return depth
}

// stringEnd is the index of the quote that closes the JSON string whose
// content starts at b[from], -1 if b ends first.
func stringEnd(b []byte, from int) int {
	for {
		j := bytes.IndexByte(b[from:], '"')
		if j < 0 {
			return -1
		}
		q := from + j
		n := 0 // backslashes before the quote: an odd run escapes it
		for k := q - 1; k >= from && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		from = q + 1
	}
}

// mapFormQueueURL maps the QueueUrl parameters of a form (a body or a
// query string), leaving every other parameter's bytes as they came.
func mapFormQueueURL(form string, mapURL func(string) string) string {
	if !strings.Contains(form, "QueueUrl") {
		return form
	}
	parts := strings.Split(form, "&")
	for i, part := range parts {
		k, v, _ := strings.Cut(part, "=")
		if key, err := url.QueryUnescape(k); err != nil || key != "QueueUrl" {
			continue
		}
		value, err := url.QueryUnescape(v)
		if err != nil {
			continue
		}
		if mapped := mapURL(value); mapped != value {
			parts[i] = k + "=" + url.QueryEscape(mapped)
		}
	}
	return strings.Join(parts, "&")
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
// or of the Query protocol's JSON form), the rest of the document
// unchanged.
func (p *Proxy) mapJSONQueueURLs(base string, body []byte) []byte {
	var doc any
	if json.Unmarshal(body, &doc) != nil {
		return body
	}
	var urls []string
	collectQueueURLs(doc, "", &urls)
	for _, u := range urls {
		if mapped := p.clientQueueURL(base, u); mapped != u {
			body = bytes.ReplaceAll(body, jsonString(u), jsonString(mapped))
		}
	}
	return body
}

// collectQueueURLs appends the strings under the members named QueueUrl or
// QueueUrls (in any case) of a JSON document.
func collectQueueURLs(v any, key string, urls *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			collectQueueURLs(c, k, urls)
		}
	case []any:
		for _, c := range v {
			collectQueueURLs(c, key, urls)
		}
	case string:
		if k := strings.ToLower(key); k == "queueurl" || k == "queueurls" {
			*urls = append(*urls, v)
		}
	}
}

// jsonString is s as a JSON string, without HTML escaping.
func jsonString(s string) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
