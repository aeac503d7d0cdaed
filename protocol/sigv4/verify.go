package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
)

// MaxSkew is how far a request's X-Amz-Date may lie from the server's clock
// in either direction, as on AWS.
const MaxSkew = 15 * time.Minute

// MaxPresignExpiry is the longest X-Amz-Expires a presigned URL may carry:
// one week, as on AWS.
const MaxPresignExpiry = 7 * 24 * time.Hour

// UnsignedPayload is the payload hash of a presigned URL's canonical request:
// the URL is signed before any body exists.
const UnsignedPayload = "UNSIGNED-PAYLOAD"

// amzDateFormat is ISO 8601 basic format, the form of X-Amz-Date.
const amzDateFormat = "20060102T150405Z"

// The presigned query parameters.
const (
	paramAlgorithm     = "X-Amz-Algorithm"
	paramCredential    = "X-Amz-Credential"
	paramDate          = "X-Amz-Date"
	paramExpires       = "X-Amz-Expires"
	paramSignedHeaders = "X-Amz-SignedHeaders"
	paramSignature     = "X-Amz-Signature"
	// paramSecurityToken carries a temporary credential's session token,
	// as a header of a header-signed request or a presigned URL's
	// parameter.
	paramSecurityToken = "X-Amz-Security-Token"
)

// The messages AWS gives for its authentication errors (docs/sqs-behaviour.md §1.6).
const (
	msgMissing        = "Request is missing Authentication Token"
	msgUnknownKey     = "The security token included in the request is invalid."
	msgSignatureWrong = "The request signature we calculated does not match the signature you provided. " +
		"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
)

// Verifier checks SigV4 signatures against a fixed set of access keys. It
// is safe for concurrent use.
type Verifier struct {
	clock clock.Clock
	keys  map[string]Credential
	// signingKeys are the keys derived from keys' secrets lately used.
	signingKeys signingKeys
}

// NewVerifier returns a Verifier accepting creds, reading the time from
// clk (the system clock if nil). It fails if a credential is invalid (see
// Credential.Validate), an access key is listed twice, or creds is empty: a
// Verifier with no keys would refuse everything, which is never what a
// configuration means.
func NewVerifier(clk clock.Clock, creds []Credential) (*Verifier, error) {
	if clk == nil {
		clk = clock.System{}
	}
	if len(creds) == 0 {
		return nil, fmt.Errorf("sigv4: no credentials")
	}
	v := &Verifier{clock: clk, keys: make(map[string]Credential, len(creds))}
	for _, c := range creds {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("sigv4: %w", err)
		}
		if _, dup := v.keys[c.AccessKeyID]; dup {
			return nil, fmt.Errorf("sigv4: the access key id %s is listed twice", c.AccessKeyID)
		}
		v.keys[c.AccessKeyID] = c
	}
	return v, nil
}

// Verify checks the signature of r, whose body the caller has read into
// body (r.Body is not touched), and returns the credential that signed it.
// A request with an Authorization header is checked as a header-signed
// request; one with X-Amz-Algorithm, X-Amz-Credential or X-Amz-Signature in
// its query string as a presigned URL. The errors are *baton.Error:
// MissingAuthenticationToken when the request carries neither,
// IncompleteSignature when what it carries is malformed,
// InvalidClientTokenId for an unknown access key or a session token (an
// X-Amz-Security-Token header or parameter: a Verifier's keys have none),
// and SignatureDoesNotMatch for a scope that is not sqs's, a date more than
// MaxSkew away, an expired presigned URL, a presigned request with an
// unsigned body or X-Amz-Target, a body that does not match
// X-Amz-Content-Sha256, or a signature that does not match.
func (v *Verifier) Verify(r *http.Request, body []byte) (Credential, error) {
	st, err := v.Precheck(r)
	if err != nil {
		return Credential{}, err
	}
	return v.Finish(r, st, body)
}

// Precheck checks what can be checked of r's signature before its body is
// read: that it carries one, well formed, by a key v holds, with a scope
// and date Verify would accept. A request it refuses, Verify refuses with
// the same error, so a server can answer it without reading, let alone
// holding, a body that anyone may send. Finish checks the rest.
func (v *Verifier) Precheck(r *http.Request) (Statement, error) {
	st, err := v.statement(r)
	return Statement{st}, err
}

// Finish completes Verify for a request Precheck passed as st, with its
// body: Precheck and Finish are Verify in two steps.
func (v *Verifier) Finish(r *http.Request, st Statement, body []byte) (Credential, error) {
	if st.s.presigned {
		return v.verifyPresigned(r, st.s, body)
	}
	return v.verifyHeader(r, st.s, body)
}

// Statement is what Precheck found a request to state about its signature,
// for Finish.
type Statement struct{ s statement }

// statement is what a request states about its signature, checked as far
// as it can be without the body.
type statement struct {
	a         Authorization
	cred      Credential
	rawDate   string
	query     params
	presigned bool
}

func (v *Verifier) statement(r *http.Request) (statement, error) {
	query := parseQuery(r.URL.RawQuery)
	var header []string
	for _, h := range r.Header.Values("Authorization") {
		if strings.TrimSpace(h) != "" {
			header = append(header, h)
		}
	}
	presigned := query.has(paramAlgorithm) || query.has(paramCredential) || query.has(paramSignature)
	var st statement
	var err error
	switch {
	case len(header) > 0 && presigned:
		return statement{}, baton.Errorf(baton.ErrIncompleteSignature,
			"Only one authentication mechanism is allowed: either the Authorization header or the %s query parameters, not both.", paramAlgorithm)
	case len(header) > 1:
		return statement{}, baton.Errorf(baton.ErrIncompleteSignature, "The request has more than one Authorization header.")
	case len(header) == 1:
		st, err = v.headerStatement(r, header[0], query)
	case presigned:
		st, err = v.presignedStatement(query)
	default:
		return statement{}, baton.Errorf(baton.ErrMissingAuthenticationToken, msgMissing)
	}
	if err != nil {
		return statement{}, err
	}
	// A Verifier's keys are long-term keys, which have no session token:
	// AWS refuses a long-term key's request that carries one, whatever its
	// signature, with InvalidClientTokenId ("The security token included
	// in the request is invalid."), the error of a stale AWS_SESSION_TOKEN
	// beside permanent keys (docs/sqs-behaviour.md §1.6).
	if hasSecurityToken(r, query) {
		return statement{}, baton.Errorf(baton.ErrInvalidClientTokenID, msgUnknownKey)
	}
	return st, nil
}

// hasSecurityToken reports whether r carries a session token, in the
// X-Amz-Security-Token header or query parameter, that is not empty.
func hasSecurityToken(r *http.Request, query params) bool {
	for _, t := range r.Header.Values(paramSecurityToken) {
		if strings.TrimSpace(t) != "" {
			return true
		}
	}
	for _, t := range query.values(paramSecurityToken) {
		if strings.TrimSpace(t) != "" {
			return true
		}
	}
	return false
}

// headerStatement checks the Authorization header form up to its payload.
func (v *Verifier) headerStatement(r *http.Request, header string, query params) (statement, error) {
	a, err := ParseAuthorization(header)
	if err != nil {
		return statement{}, err
	}
	date, rawDate, err := headerDate(r, header)
	if err != nil {
		return statement{}, err
	}
	cred, err := v.checkScope(a, rawDate)
	if err != nil {
		return statement{}, err
	}
	if err := v.checkSkew(date, rawDate); err != nil {
		return statement{}, err
	}
	return statement{a: a, cred: cred, rawDate: rawDate, query: query}, nil
}

// verifyHeader checks the Authorization header form.
func (v *Verifier) verifyHeader(r *http.Request, st statement, body []byte) (Credential, error) {
	a, cred, rawDate, query := st.a, st.cred, st.rawDate, st.query
	payload := hashHex(body)
	if claimed := r.Header.Get("X-Amz-Content-Sha256"); claimed != "" && claimed != payload {
		if claimed == UnsignedPayload {
			return Credential{}, baton.Errorf(baton.ErrSignatureDoesNotMatch,
				"X-Amz-Content-Sha256 is UNSIGNED-PAYLOAD, but SQS requests signed in the Authorization header must sign their body.")
		}
		return Credential{}, baton.Errorf(baton.ErrSignatureDoesNotMatch,
			"The provided 'x-amz-content-sha256' header does not match what was computed.")
	}
	canonical := canonicalRequest(r, query, a.SignedHeaders, payload)
	if sts, ok := v.matches(cred, a, rawDate, canonical); !ok {
		return Credential{}, mismatch(canonical, sts)
	}
	return cred, nil
}

// presignedStatement checks the query-string form up to its payload and
// X-Amz-Target.
func (v *Verifier) presignedStatement(query params) (statement, error) {
	get := func(name string) (string, error) {
		vals := query.values(name)
		switch {
		case len(vals) == 0 || vals[0] == "":
			return "", baton.Errorf(baton.ErrIncompleteSignature,
				"Query-string authentication version 4 requires the %s, %s, %s, %s, %s, and %s parameters; %s is missing.",
				paramAlgorithm, paramCredential, paramSignature, paramDate, paramSignedHeaders, paramExpires, name)
		case len(vals) > 1:
			return "", baton.Errorf(baton.ErrIncompleteSignature, "The query parameter %s appears more than once.", name)
		}
		return vals[0], nil
	}
	var p [6]string
	for i, name := range []string{paramAlgorithm, paramCredential, paramDate, paramExpires, paramSignedHeaders, paramSignature} {
		var err error
		if p[i], err = get(name); err != nil {
			return statement{}, err
		}
	}
	alg, credential, rawDate, rawExpires, signedHeaders, signature := p[0], p[1], p[2], p[3], p[4], p[5]
	if alg != Algorithm {
		return statement{}, baton.Errorf(baton.ErrIncompleteSignature,
			"Unsupported AWS 'algorithm': '%s'. Sign requests with %s (Signature Version 4).", clip(alg), Algorithm)
	}
	a := Authorization{Signature: signature}
	var err error
	if a.AccessKeyID, a.Scope, err = parseCredential(credential); err != nil {
		return statement{}, err
	}
	if a.SignedHeaders, err = splitSignedHeaders(signedHeaders); err != nil {
		return statement{}, err
	}
	date, err := parseAmzDate(rawDate)
	if err != nil {
		return statement{}, err
	}
	secs, err := strconv.Atoi(rawExpires)
	if err != nil || secs < 1 || secs > int(MaxPresignExpiry/time.Second) {
		return statement{}, baton.Errorf(baton.ErrIncompleteSignature,
			"%s must be a whole number of seconds from 1 to %d (one week); got '%s'.", paramExpires, int(MaxPresignExpiry/time.Second), clip(rawExpires))
	}
	cred, err := v.checkScope(a, rawDate)
	if err != nil {
		return statement{}, err
	}
	now := v.clock.Now().UTC()
	if date.After(now.Add(MaxSkew)) {
		return statement{}, notYetCurrent(rawDate, now)
	}
	// How AWS words an expired presigned URL is unconfirmed (docs/sqs-behaviour.md
	// §1.6); this mirrors its clock-skew message with the URL's lifetime.
	if now.After(date.Add(time.Duration(secs) * time.Second)) {
		return statement{}, baton.Errorf(baton.ErrSignatureDoesNotMatch,
			"Signature expired: %s is now earlier than %s (%s - %d sec.)",
			rawDate, now.Add(-time.Duration(secs)*time.Second).Format(amzDateFormat), now.Format(amzDateFormat), secs)
	}
	return statement{a: a, cred: cred, rawDate: rawDate, query: query, presigned: true}, nil
}

// verifyPresigned checks the query-string form. The canonical request's
// payload hash is UNSIGNED-PAYLOAD, as aws-sdk-go-v2's PresignHTTP is
// usually called; a URL signed over the SHA-256 of the body (botocore's
// choice for services other than S3) is accepted too. A request with a body
// must be signed over it, and an X-Amz-Target header must be signed: a URL
// grants what it signs, not what its holder adds.
func (v *Verifier) verifyPresigned(r *http.Request, st statement, body []byte) (Credential, error) {
	a, cred, rawDate, query := st.a, st.cred, st.rawDate, st.query
	// X-Amz-Target picks a JSON request's operation: unsigned, it would let
	// whoever holds the URL run any operation with it. aws-sdk-go-v2's
	// PresignHTTP signs it as a query parameter, which the header must repeat.
	if target := r.Header.Values("X-Amz-Target"); len(target) > 0 && !slices.Contains(a.SignedHeaders, "x-amz-target") &&
		!slices.Equal(target, query.values("X-Amz-Target")) {
		return Credential{}, baton.Errorf(baton.ErrSignatureDoesNotMatch,
			"The request has an X-Amz-Target header, but %s does not name it: the operation of a presigned request must be signed.", paramSignedHeaders)
	}
	signed := query.without(paramSignature)
	if len(body) > 0 {
		// The body is acted on (a JSON request, or a form whose values
		// override the query string's), so only a URL signed over its
		// hash covers it.
		canonical := canonicalRequest(r, signed, a.SignedHeaders, hashHex(body))
		if sts, ok := v.matches(cred, a, rawDate, canonical); !ok {
			if _, unsigned := v.matches(cred, a, rawDate, canonicalRequest(r, signed, a.SignedHeaders, UnsignedPayload)); unsigned {
				return Credential{}, baton.Errorf(baton.ErrSignatureDoesNotMatch,
					"The URL is presigned with %s, but the request has a body: a body must be signed.", UnsignedPayload)
			}
			return Credential{}, mismatch(canonical, sts)
		}
		return cred, nil
	}
	canonical := canonicalRequest(r, signed, a.SignedHeaders, UnsignedPayload)
	sts, ok := v.matches(cred, a, rawDate, canonical)
	if !ok {
		if _, ok = v.matches(cred, a, rawDate, canonicalRequest(r, signed, a.SignedHeaders, hashHex(nil))); !ok {
			return Credential{}, mismatch(canonical, sts)
		}
	}
	return cred, nil
}

// checkScope finds the signing key and checks what the scope may name.
func (v *Verifier) checkScope(a Authorization, rawDate string) (Credential, error) {
	cred, ok := v.keys[a.AccessKeyID]
	if !ok {
		return Credential{}, baton.Errorf(baton.ErrInvalidClientTokenID, msgUnknownKey)
	}
	s := a.Scope
	switch {
	case s.Date != rawDate[:8]:
		return Credential{}, baton.Errorf(baton.ErrSignatureDoesNotMatch,
			"Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '%s' != '%s', from '%s'.",
			clip(s.Date), rawDate[:8], rawDate)
	case s.Region == "":
		return Credential{}, baton.Errorf(baton.ErrSignatureDoesNotMatch, "Credential should be scoped to a valid region, not ''.")
	case s.Service != Service && s.Service != ServiceSNS:
		return Credential{}, baton.Errorf(baton.ErrSignatureDoesNotMatch, "Credential should be scoped to correct service: '%s'.", Service)
	case s.Terminator != Terminator:
		return Credential{}, baton.Errorf(baton.ErrSignatureDoesNotMatch,
			"Credential should be scoped with a valid terminator: '%s', not '%s'.", Terminator, clip(s.Terminator))
	case !slices.Contains(a.SignedHeaders, "host"):
		return Credential{}, baton.Errorf(baton.ErrIncompleteSignature,
			"The host header must be signed; SignedHeaders is '%s'.", clip(strings.Join(a.SignedHeaders, ";")))
	}
	return cred, nil
}

// checkSkew refuses a header-signed request dated more than MaxSkew from now.
func (v *Verifier) checkSkew(date time.Time, rawDate string) error {
	now := v.clock.Now().UTC()
	switch {
	case date.Before(now.Add(-MaxSkew)):
		return baton.Errorf(baton.ErrSignatureDoesNotMatch, "Signature expired: %s is now earlier than %s (%s - %d min.)",
			rawDate, now.Add(-MaxSkew).Format(amzDateFormat), now.Format(amzDateFormat), int(MaxSkew/time.Minute))
	case date.After(now.Add(MaxSkew)):
		return notYetCurrent(rawDate, now)
	}
	return nil
}

func notYetCurrent(rawDate string, now time.Time) error {
	return baton.Errorf(baton.ErrSignatureDoesNotMatch, "Signature not yet current: %s is still later than %s (%s + %d min.)",
		rawDate, now.Add(MaxSkew).Format(amzDateFormat), now.Format(amzDateFormat), int(MaxSkew/time.Minute))
}

// headerDate returns the request's signing time from X-Amz-Date, with the
// header's text. Every AWS SDK and the CLI send X-Amz-Date; the HTTP Date
// header that SigV4 also allows is not accepted.
func headerDate(r *http.Request, authorization string) (time.Time, string, error) {
	raw := r.Header.Get("X-Amz-Date")
	if raw == "" {
		return time.Time{}, "", baton.Errorf(baton.ErrIncompleteSignature,
			"Authorization header requires existence of a 'X-Amz-Date' header. Authorization=%s", clip(authorization))
	}
	t, err := parseAmzDate(raw)
	return t, raw, err
}

func parseAmzDate(raw string) (time.Time, error) {
	t, err := time.Parse(amzDateFormat, raw)
	if err != nil || len(raw) != len(amzDateFormat) {
		return time.Time{}, baton.Errorf(baton.ErrIncompleteSignature,
			"Date must be in ISO-8601 'basic format'. Got '%s'. See http://en.wikipedia.org/wiki/ISO_8601", clip(raw))
	}
	return t, nil
}

// matches reports whether a's signature is the one cred's secret gives the
// canonical request, comparing in constant time. It returns the string to
// sign for the error message.
func (v *Verifier) matches(cred Credential, a Authorization, rawDate, canonical string) (string, bool) {
	sts := Algorithm + "\n" + rawDate + "\n" + a.Scope.String() + "\n" + hashHex([]byte(canonical))
	key, ks, kept := v.signingKeys.derive(cred, a.Scope)
	want := hex.EncodeToString(hmacSHA256(key, sts))
	ok := hmac.Equal([]byte(want), []byte(a.Signature))
	if ok && !kept {
		v.signingKeys.keep(ks, key)
	}
	return sts, ok
}

// mismatch is SignatureDoesNotMatch with what the server signed appended,
// as AWS does, so that a client author can find the difference.
func mismatch(canonical, sts string) error {
	return baton.Errorf(baton.ErrSignatureDoesNotMatch,
		"%s\n\nThe Canonical String for this request should have been\n'%s'\n\nThe String-to-Sign should have been\n'%s'\n",
		msgSignatureWrong, canonical, sts)
}

// canonicalRequest rebuilds the canonical request: method, URI, query,
// signed headers with their values, the signed-header list and the payload
// hash, one per line.
func canonicalRequest(r *http.Request, query params, signedHeaders []string, payloadHash string) string {
	names := slices.Clone(signedHeaders)
	slices.Sort(names)
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(canonicalURI(r.URL))
	b.WriteByte('\n')
	b.WriteString(query.canonical())
	b.WriteByte('\n')
	for _, name := range names {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(headerValue(r, name))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(names, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
}

// canonicalURI is the path as sent, URI-encoded once more: services other
// than S3 sign the already-escaped path escaped again.
func canonicalURI(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		return "/"
	}
	return uriEncode(p, true)
}

// headerValue is a signed header's canonical value: its values trimmed,
// inner runs of spaces collapsed, joined by commas. Go's server moves Host
// (and, for chunked bodies, Content-Length) out of the header map.
func headerValue(r *http.Request, name string) string {
	switch name {
	case "host":
		return collapseSpaces(r.Host)
	case "content-length":
		if r.Header.Get("Content-Length") == "" && r.ContentLength > 0 {
			return strconv.FormatInt(r.ContentLength, 10)
		}
	}
	vals := r.Header.Values(name)
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = collapseSpaces(v)
	}
	return strings.Join(out, ",")
}

func collapseSpaces(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	space := false
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// param is one decoded query parameter.
type param struct{ name, value string }

// params are a query string's parameters in the order sent.
type params []param

// parseQuery splits a raw query string. A component with a bad escape is
// kept as sent; it then cannot match a signature, which is the right answer.
func parseQuery(raw string) params {
	var ps params
	for _, piece := range strings.Split(raw, "&") {
		if piece == "" {
			continue
		}
		name, value, _ := strings.Cut(piece, "=")
		ps = append(ps, param{unescape(name), unescape(value)})
	}
	return ps
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

func (ps params) has(name string) bool { return len(ps.values(name)) > 0 }

func (ps params) values(name string) []string {
	var vs []string
	for _, p := range ps {
		if p.name == name {
			vs = append(vs, p.value)
		}
	}
	return vs
}

func (ps params) without(name string) params {
	return slices.DeleteFunc(slices.Clone(ps), func(p param) bool { return p.name == name })
}

// canonical encodes names and values per RFC 3986 and sorts by name, then
// value.
func (ps params) canonical() string {
	enc := make([]param, len(ps))
	for i, p := range ps {
		enc[i] = param{uriEncode(p.name, false), uriEncode(p.value, false)}
	}
	slices.SortFunc(enc, func(a, b param) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
	var b strings.Builder
	for i, p := range enc {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.name)
		b.WriteByte('=')
		b.WriteString(p.value)
	}
	return b.String()
}

// uriEncode percent-encodes every byte but RFC 3986's unreserved characters
// (and '/' when keepSlash), with upper-case hex digits.
func uriEncode(s string, keepSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '~' || c == '/' && keepSlash {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
