package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestCheckExposure covers the --listen decision without binding anything
// but loopback: which addresses count as loopback, the refusal, and the
// warning --allow-anonymous logs.
func TestCheckExposure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		listen               string
		authenticated, allow bool
		wantErr, wantWarn    bool
	}{
		{listen: "127.0.0.1:9324"},
		{listen: "127.0.0.2:9324"},
		{listen: "[::1]:9324"},
		{listen: "localhost:9324"},
		{listen: "0.0.0.0:9324", wantErr: true},
		{listen: ":9324", wantErr: true},
		{listen: "[::]:9324", wantErr: true},
		{listen: "192.0.2.10:9324", wantErr: true},
		{listen: "queue.example.com:9324", wantErr: true},
		{listen: "not an address", wantErr: true},
		{listen: "0.0.0.0:9324", authenticated: true},
		{listen: "0.0.0.0:9324", allow: true, wantWarn: true},
		{listen: "127.0.0.1:9324", allow: true},
	} {
		var logs bytes.Buffer
		err := checkExposure(tc.listen, tc.authenticated, tc.allow, slog.New(slog.NewTextHandler(&logs, nil)))
		if gotErr := err != nil; gotErr != tc.wantErr {
			t.Errorf("%+v: error %v, want error %v", tc, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "refusing to serve "+tc.listen+" without credentials") {
			t.Errorf("%+v: error %q does not say why", tc, err)
		}
		if gotWarn := strings.Contains(logs.String(), "level=WARN"); gotWarn != tc.wantWarn {
			t.Errorf("%+v: logs %q, want a warning %v", tc, logs.String(), tc.wantWarn)
		}
	}
}
