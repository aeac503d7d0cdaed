package server

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof" // also registers on http.DefaultServeMux, which Baton never serves
	"strings"

	"github.com/baton-sqs/baton/protocol/sigv4"
)

// The Go runtime's profiles (net/http/pprof) are served under /debug/pprof/
// to whoever holds the admin credentials. With authentication on, a request
// must be SigV4-signed by one of the keys, as /metrics and the admin API
// must, or carry one as HTTP Basic credentials (the access key id as the
// user name, the secret as the password), which `go tool pprof` sends when
// the URL holds them:
//
//	go tool pprof 'http://AKID:SECRET@127.0.0.1:9324/debug/pprof/profile?seconds=20'
//
// Without authentication only clients on a loopback address get them, even
// when --allow-anonymous opens the SQS API to the network: profiles show the
// server's internals and cost CPU while they run.

const pprofPrefix = "/debug/pprof/"

// isPprofPath reports whether a request path is one of the profile pages.
func isPprofPath(path string) bool {
	return path == "/debug/pprof" || strings.HasPrefix(path, pprofPrefix)
}

// newPprofHandler returns the profile pages behind v's keys, or, with a nil
// v, for loopback clients only.
func newPprofHandler(v *sigv4.Verifier, guard *signInGuard, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(pprofPrefix, pprof.Index) // and every named profile: heap, goroutine, allocs, …
	mux.HandleFunc(pprofPrefix+"cmdline", pprof.Cmdline)
	mux.HandleFunc(pprofPrefix+"profile", pprof.Profile)
	mux.HandleFunc(pprofPrefix+"symbol", pprof.Symbol)
	mux.HandleFunc(pprofPrefix+"trace", pprof.Trace)
	mux.Handle("/debug/pprof", http.RedirectHandler(pprofPrefix, http.StatusMovedPermanently))
	if v == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !fromLoopback(r) {
				http.Error(w, "profiles are served to loopback clients only when the server has no credentials", http.StatusForbidden)
				return
			}
			mux.ServeHTTP(w, r)
		})
	}
	return signedOrBasic(v, guard, log, mux)
}

// signedOrBasic wraps next so that only requests signed (SigV4) with one of
// v's keys, or carrying one of its keys and secrets as HTTP Basic
// credentials, reach it, for the tools that cannot sign: a browser, curl,
// Prometheus (basic_auth in a scrape config).
func signedOrBasic(v *sigv4.Verifier, guard *signInGuard, log *slog.Logger, next http.Handler) http.Handler {
	signed, basic := Authenticate(v, log, next), basicAuth(v, guard, log, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hasBasicAuth(r) {
			basic.ServeHTTP(w, r)
			return
		}
		signed.ServeHTTP(w, r)
	})
}

// fromLoopback reports whether the request came from a loopback address.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
