package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

func get(t *testing.T, r *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func newGet(t *testing.T, url string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Without credentials the profiles are open to loopback clients.
func TestPprofWithoutCredentials(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	for path, want := range map[string]string{
		"/debug/pprof/":                  "goroutine",
		"/debug/pprof":                   "goroutine", // redirected
		"/debug/pprof/cmdline":           "",
		"/debug/pprof/goroutine?debug=1": "goroutine profile",
	} {
		code, body := get(t, newGet(t, srv.URL+path))
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %.80q, want 200 with %q", path, code, body, want)
		}
	}
}

// A client that is not on a loopback address gets nothing without
// credentials, even from a server that serves it the SQS API.
func TestPprofRefusesRemoteWithoutCredentials(t *testing.T) {
	t.Parallel()
	eng, err := engine.New(engine.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	h := server.New(server.Config{Engine: eng})
	for addr, want := range map[string]int{"192.0.2.7:4000": http.StatusForbidden, "[::1]:4000": http.StatusOK} {
		r := httptest.NewRequest(http.MethodGet, "/debug/pprof/", nil)
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("from %s: status %d, want %d", addr, w.Code, want)
		}
	}
}

// With credentials a request needs a key: SigV4 or HTTP Basic.
func TestPprofBehindCredentials(t *testing.T) {
	t.Parallel()
	key := sigv4.Credential{AccessKeyID: "AKIDADMIN", SecretAccessKey: "admin-secret", Account: testutil.Account}
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{key}})
	url := srv.URL + "/debug/pprof/cmdline"

	if code, _ := get(t, newGet(t, url)); code != http.StatusForbidden {
		t.Errorf("unsigned: status %d, want 403", code)
	}
	wrong := newGet(t, url)
	wrong.SetBasicAuth(key.AccessKeyID, "not-the-secret")
	if code, _ := get(t, wrong); code != http.StatusUnauthorized {
		t.Errorf("wrong Basic secret: status %d, want 401", code)
	}
	basic := newGet(t, url)
	basic.SetBasicAuth(key.AccessKeyID, key.SecretAccessKey)
	if code, _ := get(t, basic); code != http.StatusOK {
		t.Errorf("Basic credentials: status %d, want 200", code)
	}
	signed := newGet(t, url)
	signNoBody(t, signed, key, srv.Clock.Now())
	if code, _ := get(t, signed); code != http.StatusOK {
		t.Errorf("SigV4-signed: status %d, want 200", code)
	}
}

// A page of another site cannot make the operator's browser start a CPU
// profile or trace (the loopback rule, or the browser's Basic credentials,
// would otherwise let it through).
func TestPprofRefusesCrossSite(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	r := newGet(t, srv.URL+"/debug/pprof/cmdline")
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	if code, body := get(t, r); code != http.StatusForbidden {
		t.Errorf("cross-site GET of a profile: %d %.80q, want 403", code, body)
	}
}
