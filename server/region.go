package server

import (
	"net"
	"net/http"
	"strings"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// Each AWS region is a namespace of queues of its own: SQS serves a region's
// queues at its endpoint, https://sqs.<region>.amazonaws.com, and a queue's
// URL and ARN name its region (the SQS Developer Guide, "Amazon SQS queue
// and message identifiers"; the legacy endpoints are
// https://<region>.queue.amazonaws.com). A Baton serves every region at
// once: a request acts on the queues of the region it names, found by
// requestRegion, and a queue of another region does not exist for it.

// requestRegion is the region r is for: that of its SigV4 credential scope
// (the Authorization header or a presigned URL's X-Amz-Credential), which
// the signature covers when the server checks signatures; else, for a
// request that is not signed, that of a host named sqs.<region>.… or
// <region>.queue.…; else "", the default region. A scope naming something
// that cannot be a region is refused as AWS refuses it.
func requestRegion(r *http.Request) (string, *baton.Error) {
	scope := ""
	if h := r.Header.Get("Authorization"); strings.TrimSpace(h) != "" {
		if a, err := sigv4.ParseAuthorization(h); err == nil {
			scope = a.Scope.Region
		}
	} else if c := r.URL.Query().Get("X-Amz-Credential"); c != "" {
		if parts := strings.Split(c, "/"); len(parts) == 5 {
			scope = parts[2]
		}
	}
	if scope != "" {
		// AWS's region names are lowercase; a client configured with
		// US-EAST-1 means us-east-1 (the signature covers the scope as
		// sent, so this changes no signature check).
		scope = strings.ToLower(scope)
		if !baton.ValidRegion(scope) {
			return "", baton.Errorf(baton.ErrSignatureDoesNotMatch, "Credential should be scoped to a valid region, not %q.", clip(scope))
		}
		return scope, nil
	}
	return HostRegion(r.Host), nil
}

// HostRegion is the region a host name names in one of the forms of SQS
// endpoints, sqs.<region>.<domain> and <region>.queue.<domain>
// (sqs.eu-central-1.localhost, eu-central-1.queue.localhost:9324), or ""
// for any other host, an IP address among them.
func HostRegion(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	labels := strings.Split(strings.ToLower(strings.TrimSuffix(host, ".")), ".")
	if len(labels) < 3 {
		return ""
	}
	region := ""
	switch {
	case labels[0] == "sqs":
		region = labels[1]
	case labels[1] == "queue":
		region = labels[0]
	}
	if !baton.ValidRegion(region) || isDigits(region) {
		return ""
	}
	return region
}

func isDigits(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}

// clip shortens what a client sent for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
