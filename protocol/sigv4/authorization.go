package sigv4

import (
	"strings"

	"github.com/baton-sqs/baton"
)

// Algorithm is the one signing algorithm accepted.
const Algorithm = "AWS4-HMAC-SHA256"

// Service is the signing name of SQS: a credential scope names it, or
// ServiceSNS.
const Service = "sqs"

// ServiceSNS is the signing name of SNS, which Baton serves on the same
// endpoint: a credential scope may name it instead of Service.
const ServiceSNS = "sns"

// Terminator ends every SigV4 credential scope.
const Terminator = "aws4_request"

// Scope is a signature's credential scope, <date>/<region>/<service>/<terminator>.
// The signing key is derived from it.
type Scope struct {
	// Date is yyyymmdd and must be the day of the request's X-Amz-Date.
	Date       string
	Region     string
	Service    string
	Terminator string
}

// String returns the scope as it appears in the string to sign.
func (s Scope) String() string {
	return s.Date + "/" + s.Region + "/" + s.Service + "/" + s.Terminator
}

// Authorization is what a request states about its signature, from the
// Authorization header or the presigned query parameters.
type Authorization struct {
	AccessKeyID string
	Scope       Scope
	// SignedHeaders are the lower-cased header names the signature covers,
	// in the order given.
	SignedHeaders []string
	// Signature is the hex HMAC-SHA256 the client computed.
	Signature string
}

// ParseAuthorization parses an Authorization header of the form
//
//	AWS4-HMAC-SHA256 Credential=<key id>/<yyyymmdd>/<region>/<service>/aws4_request, SignedHeaders=<a;b;c>, Signature=<hex>
//
// Parameters may come in any order, with or without spaces after the commas;
// unknown ones are ignored. A value that does not have this form is an
// IncompleteSignature error worded as AWS words it. ParseAuthorization checks
// the syntax only: whether the scope names sqs, the right date and a known
// key is for the Verifier to decide.
func ParseAuthorization(header string) (Authorization, error) {
	alg, rest, _ := strings.Cut(strings.TrimSpace(header), " ")
	if alg != Algorithm {
		return Authorization{}, baton.Errorf(baton.ErrIncompleteSignature,
			"Unsupported AWS 'algorithm': '%s'. Sign requests with %s (Signature Version 4).", clip(alg), Algorithm)
	}
	var credential, signedHeaders, signature string
	seen := map[string]bool{}
	for _, part := range strings.Split(rest, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			return Authorization{}, baton.Errorf(baton.ErrIncompleteSignature,
				"'%s' not a valid key=value pair (missing equal-sign) in Authorization header: '%s'.", clip(part), clip(header))
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		var dst *string
		switch key {
		case "Credential":
			dst = &credential
		case "SignedHeaders":
			dst = &signedHeaders
		case "Signature":
			dst = &signature
		default:
			continue
		}
		if seen[key] {
			return Authorization{}, baton.Errorf(baton.ErrIncompleteSignature,
				"'%s' appears more than once in Authorization header: '%s'.", key, clip(header))
		}
		seen[key] = true
		*dst = value
	}
	var missing strings.Builder
	for _, p := range []struct{ name, value string }{
		{"Credential", credential}, {"Signature", signature}, {"SignedHeaders", signedHeaders},
	} {
		if p.value == "" {
			missing.WriteString("Authorization header requires '" + p.name + "' parameter. ")
		}
	}
	if missing.Len() > 0 {
		return Authorization{}, baton.Errorf(baton.ErrIncompleteSignature, "%sAuthorization=%s", missing.String(), clip(header))
	}
	a := Authorization{Signature: signature}
	var err error
	if a.AccessKeyID, a.Scope, err = parseCredential(credential); err != nil {
		return Authorization{}, err
	}
	if a.SignedHeaders, err = splitSignedHeaders(signedHeaders); err != nil {
		return Authorization{}, err
	}
	return a, nil
}

// parseCredential splits <key id>/<date>/<region>/<service>/<terminator>.
func parseCredential(s string) (string, Scope, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 5 {
		return "", Scope{}, baton.Errorf(baton.ErrIncompleteSignature,
			"Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got '%s'", clip(s))
	}
	return parts[0], Scope{Date: parts[1], Region: parts[2], Service: parts[3], Terminator: parts[4]}, nil
}

// splitSignedHeaders splits a ;-separated header list and lower-cases it.
func splitSignedHeaders(s string) ([]string, error) {
	names := strings.Split(s, ";")
	for i, n := range names {
		names[i] = strings.ToLower(strings.TrimSpace(n))
		if names[i] == "" {
			return nil, baton.Errorf(baton.ErrIncompleteSignature, "SignedHeaders '%s' names an empty header.", clip(s))
		}
	}
	return names, nil
}

// maxEcho bounds how much of a client's own input an error message repeats.
const maxEcho = 512

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	return s[:maxEcho] + "..."
}
