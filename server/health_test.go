package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine"
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
