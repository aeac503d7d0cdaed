package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/internal/cli"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
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

// TestHealthFollowsTheHealthFile runs `baton serve --health-file` on a
// port of its choosing over TLS (a self-signed certificate no client
// trusts) and checks `baton health` with BATON_HEALTH_FILE asks it there,
// whatever BATON_LISTEN says: the container image's HEALTHCHECK then
// follows a --listen on the command line, a config file's listen: and
// https, which BATON_LISTEN alone cannot tell it. A stopped server removes
// the file. Not parallel: it sets environment variables.
func TestHealthFollowsTheHealthFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "health-url")
	certFile, keyFile := selfSigned(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready, done := make(chan string, 1), make(chan error, 1)
	var logs logbuf.Buffer
	go func() {
		done <- cli.Serve(ctx, cli.ServeConfig{Listen: "127.0.0.1:0", Store: "memory", Durability: "full", DataDir: t.TempDir(),
			AccountID: "000000000000", Region: "us-east-1", LogLevel: "info", Logs: &logs,
			TLSCert: certFile, TLSKey: keyFile, HealthFile: file}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("Serve returned before serving: %v\n%s", err, logs.String())
	}
	if b, err := os.ReadFile(file); err != nil || strings.TrimSpace(string(b)) != "https://"+addr+"/healthz" {
		t.Fatalf("the health file holds %q (%v), want https://%s/healthz", b, err, addr)
	}

	health := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := cli.Main{Stdout: &stdout, Stderr: &stderr}.Run(context.Background(), append([]string{"health"}, args...))
		return code, stderr.String()
	}
	t.Setenv("BATON_LISTEN", "0.0.0.0:1") // the image's, left behind by a --listen
	t.Setenv("BATON_HEALTH_FILE", file)
	if code, stderr := health(); code != 0 {
		t.Fatalf("health with BATON_HEALTH_FILE: exit %d, want 0\n%s", code, stderr)
	}
	// --url still wins.
	if code, stderr := health("--url", "http://127.0.0.1:1/healthz"); code != 1 || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("health --url with BATON_HEALTH_FILE set: exit %d, stderr %q; want 1 asking --url", code, stderr)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after a clean stop the health file is still there (%v)", err)
	}
	if code, stderr := health(); code != 1 || !strings.Contains(stderr, "127.0.0.1:1/healthz") {
		t.Errorf("health after the server stopped: exit %d, stderr %q; want 1, asking where BATON_LISTEN says", code, stderr)
	}
}

// TestServeHealthFileUnwritable: a health file that cannot be written (a
// read-only file system) does not stop the server; the log says why, and
// the check asks where BATON_LISTEN says.
func TestServeHealthFileUnwritable(t *testing.T) {
	t.Parallel()
	var logs logbuf.Buffer
	file := filepath.Join(t.TempDir(), "no-such-dir", "health-url")
	addr := serve(t, cli.ServeConfig{HealthFile: file, Logs: &logs})
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %v, %v; want 200", resp, err)
	}
	if !strings.Contains(logs.String(), "could not write the health file") {
		t.Errorf("no warning about the health file in the log:\n%s", logs.String())
	}
}

// A failed `baton health` says in one line which URL it asked, what failed
// and what to check, as the client commands do: a server not reached
// (their "cannot reach the server" words), one that takes the connection
// and never answers, a status with the first line of what the server said
// (Baton's 503 says why), a URL that is none. It printed Go's error chain
// (`Get "URL": context deadline exceeded …`) and a bare status before.
func TestHealthSaysWhatFailed(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "store unavailable: database unreachable: connection refused\nmore", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0") // takes connections, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/healthz"
	closed.Close()
	silentURL := "http://" + silent.Addr().String() + "/healthz"
	// A generous --timeout, but for the server that never answers.
	for _, tt := range []struct {
		url  string
		want string
	}{
		{closedURL, "baton: health: " + closedURL + ": cannot reach the server: dial tcp " + closed.Addr().String() + ": connect: connection refused " +
			"(is `baton serve` running? --url, else the file BATON_HEALTH_FILE names, else BATON_LISTEN, says where)"},
		{silentURL, "baton: health: " + silentURL + ": no answer within --timeout 300ms: is the server overloaded or stuck, or is something else listening on that port?"},
		{down.URL + "/healthz", "baton: health: " + down.URL + "/healthz answered 503 Service Unavailable: store unavailable: database unreachable: connection refused"},
		{"http://[bad", `baton: health: "http://[bad" is not a URL: missing ']' in host`},
	} {
		timeout := "30s"
		if tt.url == silentURL {
			timeout = "300ms"
		}
		r := runCLI(t, cliEnv(t), nil, "health", "--url", tt.url, "--timeout", timeout)
		if r.code != 1 || r.stderr != tt.want+"\n" {
			t.Errorf("health --url %s: %v\nwant exit 1 and the one line %q", tt.url, r, tt.want)
		}
	}
}
