package cli

import "testing"

// listenURL is a URL a local client can dial: an unspecified listen
// address becomes loopback.
func TestListenURL(t *testing.T) {
	for _, tt := range []struct {
		addr  string
		https bool
		want  string
	}{
		{"127.0.0.1:9324", false, "http://127.0.0.1:9324"},
		{"0.0.0.0:9324", false, "http://127.0.0.1:9324"},
		{"[::]:9324", true, "https://[::1]:9324"},
		{"[::1]:9443", true, "https://[::1]:9443"},
	} {
		if got := listenURL(tt.addr, tt.https); got != tt.want {
			t.Errorf("listenURL(%q, %v) = %q, want %q", tt.addr, tt.https, got, tt.want)
		}
	}
}
