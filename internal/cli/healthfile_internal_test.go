package cli

import (
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
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

// TestHealthFileLeftToTheServerThatWroteItLast: two servers told one health
// file; the first to stop leaves the file that names the other, which still
// serves, and the other's stop removes it.
func TestHealthFileLeftToTheServerThatWroteItLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "health-url")
	log := slog.New(slog.DiscardHandler)
	removeFirst := writeHealthFile(path, "http://127.0.0.1:4001/healthz", log)
	removeSecond := writeHealthFile(path, "http://127.0.0.1:4002/healthz", log)
	removeFirst()
	if got, err := readHealthFile(path); err != nil || got != "http://127.0.0.1:4002/healthz" {
		t.Fatalf("after the first server's stop the file reads %q, %v; want the second's URL", got, err)
	}
	removeSecond()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after the second server's stop: stat %v; want the file gone", err)
	}
}
