package cli_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/internal/cli"
)

// TestHealth pins `baton health`, the image's health check: exit 0 when
// /healthz answers 200, and 1 with the status on standard error when it
// answers anything else or nothing.
func TestHealth(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()

	health := func(url string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := cli.Main{Stdout: &stdout, Stderr: &stderr}.Run(context.Background(), []string{"health", "--url", url})
		return code, stderr.String()
	}
	if code, stderr := health(srv.URL + "/healthz"); code != 0 {
		t.Fatalf("health on a 200: exit %d, want 0\n%s", code, stderr)
	}
	status = http.StatusServiceUnavailable
	if code, stderr := health(srv.URL + "/healthz"); code != 1 || !strings.Contains(stderr, "503 Service Unavailable") {
		t.Fatalf("health on a 503: exit %d, stderr %q; want 1 naming the status", code, stderr)
	}
	addr := srv.Listener.Addr().String()
	srv.Close()
	if code, stderr := health("http://" + addr + "/healthz"); code != 1 || !strings.Contains(stderr, "health:") {
		t.Fatalf("health on a closed port: exit %d, stderr %q; want 1 with the reason", code, stderr)
	}
}

// Without --url, `baton health` asks the server BATON_LISTEN names: the
// container image sets BATON_LISTEN for baton serve, and a user who moves
// the server to another port (LocalStack's 4566) sets it again, so the
// image's HEALTHCHECK follows instead of asking 9324 and calling a healthy
// server unhealthy. Not parallel: it sets BATON_LISTEN.
func TestHealthAsksWhereBATONLISTENSays(t *testing.T) {
	start := func(status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		return port
	}
	health := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := cli.Main{Stdout: &stdout, Stderr: &stderr}.Run(context.Background(), append([]string{"health"}, args...))
		return code, stderr.String()
	}
	up, down := start(http.StatusOK), start(http.StatusServiceUnavailable)

	for _, listen := range []string{"0.0.0.0:" + up, ":" + up, "[::]:" + up, "127.0.0.1:" + up} {
		t.Setenv("BATON_LISTEN", listen)
		if code, stderr := health(); code != 0 {
			t.Errorf("BATON_LISTEN=%s, a server answering 200 there: exit %d, want 0\n%s", listen, code, stderr)
		}
	}
	t.Setenv("BATON_LISTEN", "0.0.0.0:"+down)
	if code, stderr := health(); code != 1 || !strings.Contains(stderr, "http://127.0.0.1:"+down+"/healthz answered 503") {
		t.Errorf("BATON_LISTEN=0.0.0.0:%s, a server answering 503 there: exit %d, stderr %q; want 1 naming that server", down, code, stderr)
	}
	// --url still wins.
	if code, stderr := health("--url", "http://127.0.0.1:"+up+"/healthz"); code != 0 {
		t.Errorf("--url of the healthy server over BATON_LISTEN: exit %d\n%s", code, stderr)
	}
}
