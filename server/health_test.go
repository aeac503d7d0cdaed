package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

func TestHealthzReflectsReadiness(t *testing.T) {
	t.Parallel()
	eng, err := engine.New(engine.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var down error
	srv := server.New(server.Config{Engine: eng, Ready: func(context.Context) error { return down }})
	for _, tt := range []struct {
		err  error
		want int
	}{{nil, http.StatusOK}, {errors.New("database unreachable"), http.StatusServiceUnavailable}, {nil, http.StatusOK}} {
		down = tt.err
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != tt.want {
			t.Errorf("with store error %v: /healthz %d, want %d", tt.err, rec.Code, tt.want)
		}
		if tt.err != nil && !strings.Contains(rec.Body.String(), tt.err.Error()) {
			t.Errorf("/healthz says %q; want it to say %q", rec.Body.String(), tt.err)
		}
	}
}

// TestRefusing: while Config.Refusing gives a reason (a node whose clock
// is too far off), SQS requests are answered ServiceUnavailable (503) with
// it; afterwards they are served again.
func TestRefusing(t *testing.T) {
	t.Parallel()
	eng, err := engine.New(engine.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var reason atomic.Value
	reason.Store("")
	srv := server.New(server.Config{Engine: eng, Refusing: func() error {
		if r := reason.Load().(string); r != "" {
			return errors.New(r)
		}
		return nil
	}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	client := testutil.NewClient(hs.URL)
	ctx := context.Background()
	if _, err := client.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatal(err)
	}
	reason.Store("clock skew too large")
	_, err = client.ListQueues(ctx, &sqs.ListQueuesInput{})
	wantAPIError(t, err, "ServiceUnavailable", http.StatusServiceUnavailable)
	if err == nil || !strings.Contains(err.Error(), "clock skew too large") {
		t.Errorf("error %v; want it to give the reason", err)
	}
	reason.Store("")
	if _, err := client.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Errorf("after the refusal ended: %v", err)
	}
}
