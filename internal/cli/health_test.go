package cli_test

import (
	"bytes"
	"context"
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
