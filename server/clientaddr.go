package server

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/baton-sqs/baton/protocol/sigv4"
)

// ParseTrustedProxies parses a comma-separated list of addresses and CIDR
// prefixes (10.0.0.5, 10.1.0.0/16, ::1) naming the proxies whose
// X-Forwarded-For header the server believes (Config.TrustProxies).
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP address nor a CIDR prefix", f)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// trusted reports whether addr is one of the trusted proxies.
func (s *Server) trusted(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range s.trustProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// clientAddr is the address of the client that made r: the connection's
// source, unless that is a trusted proxy, in which case X-Forwarded-For is
// read from its end (the hop the trusted proxy appended) back to the first
// address that is not a trusted proxy. A header from a connection not named
// by Config.TrustProxies is ignored: anyone can send one.
func (s *Server) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(s.trustProxies) == 0 {
		return host
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !s.trusted(peer) {
		return host
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := host
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			if ap, perr := netip.ParseAddrPort(strings.TrimSpace(hops[i])); perr == nil {
				a, err = ap.Addr(), nil
			}
		}
		if err != nil {
			return client // not an address: what the trusted hop said ends here
		}
		client = a.Unmap().String()
		if !s.trusted(a) {
			return client
		}
	}
	return client
}

// signingKey is the access key id r is signed with (its Authorization
// header or presigned X-Amz-Credential), or "" for an unsigned request.
// Without credentials configured the server does not check it.
func signingKey(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		a, err := sigv4.ParseAuthorization(h)
		if err != nil {
			return ""
		}
		return a.AccessKeyID
	}
	if strings.Contains(r.URL.RawQuery, "X-Amz-Credential") {
		key, _, _ := strings.Cut(r.URL.Query().Get("X-Amz-Credential"), "/")
		return key
	}
	return ""
}
