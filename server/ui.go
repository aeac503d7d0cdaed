package server

import (
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server/dashboard"
)

// The web dashboard (package dashboard) is served at / and under /ui/, next
// to the SQS API on the same port. A browser cannot sign SigV4, so when
// credentials are configured the dashboard, and the admin API when a request
// carries them, accept HTTP Basic authentication: the access key id as the
// user name, its secret access key as the password, checked against the
// keys the SigV4 verifier holds. Basic credentials travel in the clear
// without TLS, as the rest of the traffic does.

// SecretVerifier checks an access key id and its secret as HTTP Basic
// authentication presents them. *sigv4.Verifier implements it.
type SecretVerifier interface {
	VerifySecret(accessKeyID, secret string) (sigv4.Credential, error)
}

// newDashboard returns the handler of the dashboard's pages and of admin
// API requests that carry Basic credentials; admin is the admin API without
// authentication. With a nil verifier, nothing is authenticated.
func (s *Server) newDashboard(v *sigv4.Verifier, guard *signInGuard, admin http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/admin/api/", admin)
	mux.Handle("/", dashboard.Handler())
	if v == nil {
		return mux
	}
	return basicAuth(v, guard, s.log, mux)
}

// isDashboardRequest tells the dashboard's requests from the SQS API's: a
// GET or HEAD of / or of a path under /ui/ that is no SQS request (neither an
// Action parameter nor an X-Amz-Target header), or an admin API request
// with Basic credentials or with no credentials at all. Everything else, a
// GET of a queue URL without an Action included, stays with the API.
//
// An admin API request without credentials is the dashboard's: a browser
// that signed in at a page sends the credentials only to paths under that
// page's directory (/ui/queues/ for a queue's page) until a 401 with a
// Basic challenge asks for them elsewhere, so the admin API must ask, not
// refuse. A SigV4 request (header or presigned) stays with the API.
func isDashboardRequest(r *http.Request) bool {
	if strings.HasPrefix(r.URL.Path, "/admin/api/") {
		if hasBasicAuth(r) {
			return true
		}
		q := r.URL.Query()
		return r.Header.Get("Authorization") == "" && !q.Has("X-Amz-Signature") && !q.Has("X-Amz-Credential")
	}
	return dashboard.IsPageRequest(r)
}

func hasBasicAuth(r *http.Request) bool {
	scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return strings.EqualFold(scheme, "Basic")
}

// basicAuth wraps next so that only requests with HTTP Basic credentials
// that v accepts reach it, with the key's account in their context. Others
// are answered 401 with a challenge, so a browser asks for the access key
// id and secret: in JSON under /admin/api/, else as a short page. A key
// whose secret was guessed at too often is refused for a while with 429
// (guard, signin.go).
func basicAuth(v SecretVerifier, guard *signInGuard, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if ok {
			if left, refused := guard.refused(id); refused {
				log.Debug("dashboard sign-in refused unchecked", "remote", r.RemoteAddr, "access_key_id", id)
				w.Header().Set("Retry-After", strconv.Itoa(int((left+time.Second-1)/time.Second)))
				writeUnauthorized(w, r, http.StatusTooManyRequests,
					"Too many failed sign-ins with this access key id; try again in a minute.")
				return
			}
			cred, err := v.VerifySecret(id, secret)
			if err == nil {
				next.ServeHTTP(w, r.WithContext(baton.NewContextWithAccount(r.Context(), cred.Account)))
				return
			}
			code := baton.AsError(err).Code
			log.Debug("dashboard sign-in refused", "remote", r.RemoteAddr, "access_key_id", id, "code", code)
			if code == baton.ErrSignatureDoesNotMatch && guard.failed(id) {
				log.Warn("dashboard sign-ins with an access key id refused for a minute after repeated wrong secrets",
					"access_key_id", id, "failures", maxSignInFailures, "last_remote", r.RemoteAddr)
			}
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="Baton", charset="UTF-8"`)
		writeUnauthorized(w, r, http.StatusUnauthorized,
			"Sign in with an access key id as the user name and its secret access key as the password.")
	})
}

// writeUnauthorized answers a refused sign-in with status and msg: in JSON
// under /admin/api/, else as a short page.
func writeUnauthorized(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	if strings.HasPrefix(r.URL.Path, "/admin/api/") {
		writeAdminError(w, status, msg)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	unauthorizedPage.Execute(w, msg)
}

var unauthorizedPage = template.Must(template.New("401").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · Baton</title></head>
<body><h1>Baton</h1><p>{{.}}</p></body></html>
`))

// BasicAuth is the dashboard's sign-in as basicAuth above, with a guard of
// its own against guessed secrets: `baton proxy` signs its dashboard in
// with it.
func BasicAuth(v SecretVerifier, clk clock.Clock, log *slog.Logger, next http.Handler) http.Handler {
	return basicAuth(v, newSignInGuard(clk), log, next)
}
