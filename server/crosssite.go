package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
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
// address or a localhost name. An empty Host (HTTP/1.0) is no browser's.
func isLocalHost(host string) bool {
	if host == "" {
		return true
	}
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host // no port
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	_, err = netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	return err == nil
}
