package cli

import (
	"crypto/tls"
	"log/slog"
	"strings"
	"testing"
)

// The start-up line's endpoint is a URL a client on this host (or in this
// container) can paste: a --listen of every interface is said as
// 127.0.0.1, whatever Go reports of the listener (one on 0.0.0.0 reports
// [::], having taken IPv6 too, and a container may have no IPv6 loopback),
// with the port the listener got.
func TestServingLineEndpoint(t *testing.T) {
	for _, tt := range []struct {
		listen, addr string
		https        bool
		want         string
	}{
		{"127.0.0.1:9324", "127.0.0.1:9324", false, "http://127.0.0.1:9324"},
		{"127.0.0.1:0", "127.0.0.1:40123", false, "http://127.0.0.1:40123"},
		{"0.0.0.0:4566", "[::]:4566", false, "http://127.0.0.1:4566"},
		{"0.0.0.0:9324", "0.0.0.0:9324", false, "http://127.0.0.1:9324"},
		{":9324", "[::]:9324", false, "http://127.0.0.1:9324"},
		{"[::]:9324", "[::]:9324", true, "https://127.0.0.1:9324"},
		{"[::1]:9443", "[::1]:9443", true, "https://[::1]:9443"},
		{"localhost:9324", "127.0.0.1:9324", false, "http://localhost:9324"},
	} {
		var logs strings.Builder
		var f frontDoor
		if tt.https {
			f.tls = &tls.Config{}
		}
		cfg := ServeConfig{Listen: tt.listen, Store: "memory", AccountID: "000000000000", Region: "us-east-1"}
		cfg.logServing(slog.New(slog.NewTextHandler(&logs, nil)), tt.addr, f)
		if want := " endpoint=" + tt.want + " dashboard=" + tt.want + "/ "; !strings.Contains(logs.String(), want) {
			t.Errorf("--listen %s listening on %s: the start-up line is\n%s\nwant %q in it", tt.listen, tt.addr, logs.String(), want)
		}
	}
}
