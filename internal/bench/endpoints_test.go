package bench_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// TestRunSpreadsWorkersAcrossEndpoints runs signed load through two
// endpoints of one server (two proxies, each a host of its own, as the
// nodes of one service are): both get requests, every signature is good
// for the host it goes to, and the result names both endpoints.
func TestRunSpreadsWorkersAcrossEndpoints(t *testing.T) {
	t.Parallel()
	key := sigv4.Credential{AccessKeyID: "AKIDBENCH", SecretAccessKey: "bench-secret", Account: testutil.Account}
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{key}})
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var counts [2]atomic.Int64
	var clients []*bench.Client
	for i := range counts {
		proxy := httputil.NewSingleHostReverseProxy(target) // keeps the Host the client signed
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			counts[i].Add(1)
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(front.Close)
		clients = append(clients, mustClient(t, bench.ClientConfig{Endpoint: front.URL, Conns: 2, NowFunc: srv.Clock.Now,
			Credentials: &bench.Credentials{AccessKeyID: key.AccessKeyID, SecretAccessKey: key.SecretAccessKey}}))
	}
	cfg := smokeConfig(t, srv.URL, bench.ScenarioSendBatch)
	cfg.Client, cfg.Clients = clients[0], clients
	cfg.Duration, cfg.Warmup = 300*time.Millisecond, 0
	res := mustRun(t, cfg)
	checkCounts(t, res)
	for i := range counts {
		if counts[i].Load() == 0 {
			t.Errorf("endpoint %d got no requests", i)
		}
	}
	if want := clients[0].Endpoint() + "," + clients[1].Endpoint(); res.Endpoint != want {
		t.Errorf("result endpoint %q, want %q", res.Endpoint, want)
	}
	if strings.Count(res.Endpoint, ",") != 1 {
		t.Errorf("result endpoint %q, want two", res.Endpoint)
	}
}
