package cli

import (
	"net"
	"testing"
)

// TestHealthURL: the health file names the address a check inside the
// host or container reaches the server on. A --listen of every interface
// is asked on 127.0.0.1: Go's listener on 0.0.0.0 reports [::] (it took
// IPv6 too), and a container may have no IPv6 loopback to ask.
func TestHealthURL(t *testing.T) {
	for _, c := range []struct {
		listen string
		addr   *net.TCPAddr
		https  bool
		want   string
	}{
		{"0.0.0.0:4566", &net.TCPAddr{IP: net.IPv6unspecified, Port: 4566}, false, "http://127.0.0.1:4566/healthz"},
		{":4566", &net.TCPAddr{IP: net.IPv6unspecified, Port: 4566}, true, "https://127.0.0.1:4566/healthz"},
		{"127.0.0.1:0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40123}, false, "http://127.0.0.1:40123/healthz"},
		{"[::1]:9324", &net.TCPAddr{IP: net.IPv6loopback, Port: 9324}, false, "http://[::1]:9324/healthz"},
		{"localhost:9324", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9324}, false, "http://localhost:9324/healthz"},
	} {
		if got := healthURL(c.listen, c.addr, c.https); got != c.want {
			t.Errorf("healthURL(%q, %v, %v) = %s, want %s", c.listen, c.addr, c.https, got, c.want)
		}
	}
}
