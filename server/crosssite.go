package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/baton-sqs/baton"
)

// A browser sends whatever a page of any site tells it to, to any address,
// and adds the credentials it holds for HTTP Basic authentication: a form
// posts, an <img> GETs, a no-cors fetch posts text/plain. Without
// credentials the SQS API acts on every request, so such a page could purge
// or delete the queues of a Baton on the operator's own machine; with them,
// the dashboard's Basic sign-in would let it act for the operator. Browsers
// say where a request comes from (Sec-Fetch-Site, Origin); SDKs, the AWS
// CLI and other programs send neither header, so refusing what a browser
// marks as another site's or origin's costs them nothing.

// checkCrossSite refuses a request a browser marks as sent by a page of
// another origin than the server's.
func checkCrossSite(r *http.Request) error {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return errors.New("cross-site requests are refused")
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != r.Host {
			return fmt.Errorf("requests from the origin %q are refused", origin)
		}
	}
	return nil
}

// A page can also take the server's origin: its author points the page's
// own name at 127.0.0.1 once the page has loaded (DNS rebinding), and the
// browser then sends its requests, Origin and all, to the server as
// same-origin ones, and lets the page read the answers. Only the Host
// header still carries the page's name. Config.LocalHostsOnly makes a
// server without credentials that listens on a loopback address answer only
// requests that name it as a client on the machine does: by an IP address
// or a localhost name (RFC 6761).

// isLocalHost reports whether a Host header names the server by an IP
// address, a localhost name, or one of allow (lowercase) or a subdomain of
// one. An empty Host (HTTP/1.0) is no browser's.
func isLocalHost(host string, allow []string) bool {
	if host == "" {
		return true
	}
	h := hostName(host)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || underAny(h, allow) {
		return true
	}
	_, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	return err == nil
}

// hostName is a Host header's name, lowercase, without port or final dot.
func hostName(host string) string {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host // no port
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// underAny reports whether name is one of domains or a subdomain of one.
func underAny(name string, domains []string) bool {
	for _, d := range domains {
		if name == d || strings.HasSuffix(name, "."+d) {
			return true
		}
	}
	return false
}

// normalHosts lowercases host names and drops a final dot.
func normalHosts(hosts []string) []string {
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), "."); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// CheckAllowHosts refuses what Config.AllowHosts must not hold: a name of
// one label (com, cloud), which would let the page of any site under it
// rebind to the server, a wildcard (a name stands for its subdomains
// already), a port, or anything but a host name.
func CheckAllowHosts(hosts []string) error {
	for _, h := range hosts {
		n := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		switch {
		case n == "" || strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "":
			return fmt.Errorf("%q is not a host name (give one such as %s, without scheme, port or wildcard)", h, LocalStackDomain)
		case !strings.Contains(n, ".") || strings.HasPrefix(n, ".") || strings.Contains(n, ".."):
			return fmt.Errorf("%q would admit every site under it: give a name of two labels or more, such as %s", h, LocalStackDomain)
		}
	}
	return nil
}

// LocalStackDomain is the domain whose names LocalStack's users have in
// their endpoints and queue URLs (sqs.us-east-1.localhost.localstack.cloud):
// every name under it resolves to 127.0.0.1 in public DNS. Its zone is not
// this machine's, though: whoever answers DNS for it, or for the user (a
// hostile network's resolver), could point one of its names at a web page
// and then at 127.0.0.1, the rebinding this check stops. So a server
// answers these names only when its operator lists the domain in
// Config.AllowHosts (baton serve --allow-host), and says so when it
// refuses one (docs/migrating.md).
const LocalStackDomain = "localhost.localstack.cloud"

// hostRefusal is the AccessDenied a LocalHostsOnly server answers a
// request to another host name with.
func hostRefusal(host string) *baton.Error {
	msg := fmt.Sprintf("This server has no credentials and answers only requests to an IP address or localhost, not to %q.", clip(host))
	if underAny(hostName(host), []string{LocalStackDomain}) {
		msg += " To answer LocalStack's host names, start it with --allow-host " + LocalStackDomain + "."
	}
	return baton.Errorf(baton.ErrAccessDenied, "%s", msg)
}
