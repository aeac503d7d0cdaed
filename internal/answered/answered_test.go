package answered_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/answered"
)

func hello(w http.ResponseWriter) {
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("hello"))
}

// failing is a writer whose connection is gone: every write fails.
type failing struct{ h http.Header }

func (f *failing) Header() http.Header       { return f.h }
func (f *failing) WriteHeader(int)           {}
func (f *failing) Write([]byte) (int, error) { return 0, errors.New("write: broken pipe") }

// A written and flushed answer went out; one whose write fails, or whose
// client had left before it was written, did not, and says why. A writer
// that cannot flush is no evidence of a loss.
func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	if err := answered.Write(context.Background(), rec, hello); err != nil || rec.Body.String() != "hello" || !rec.Flushed {
		t.Errorf("written: %v, %q, flushed %v", err, rec.Body, rec.Flushed)
	}
	if err := answered.Write(context.Background(), &failing{h: http.Header{}}, hello); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("a failing write: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec = httptest.NewRecorder()
	if err := answered.Write(ctx, rec, hello); err == nil || !strings.Contains(err.Error(), "had left before") || rec.Body.String() != "hello" {
		t.Errorf("a client gone before: %v, %q", err, rec.Body)
	}
	var noFlush struct{ http.ResponseWriter }
	noFlush.ResponseWriter = httptest.NewRecorder()
	if err := answered.Write(context.Background(), noFlush, hello); err != nil {
		t.Errorf("a writer that cannot flush: %v", err)
	}
}

// stalledPeer serves handler on a free port of 127.0.0.1 and sends it a
// request over a connection with a small receive buffer that then reads
// nothing and stays open, as a peer whose host is gone: the answer's
// write can only wait. It returns the server's address.
func stalledPeer(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET /stalled HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return ln.Addr().String()
}

// An answer to a peer that stopped reading fails within seconds of the
// stall (Patience), where it waited until TCP gave up; the connection's
// other requests are not bounded by a deadline an answer set and lifted:
// a keep-alive connection's plain answer written after the stalled one
// failed goes out.
func TestWriteToAStalledPeer(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), 16<<20)
	failed := make(chan error, 1)
	addr := stalledPeer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stalled" {
			failed <- answered.Write(r.Context(), w, func(w http.ResponseWriter) {
				w.Header().Set("Content-Length", strconv.Itoa(len(big)))
				w.Write(big)
			})
			return
		}
		if r.URL.Path == "/bounded" {
			answered.Write(r.Context(), w, hello)
			return
		}
		hello(w) // no bound of its own
	})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rd := bufio.NewReader(conn)
	get := func(path string) string {
		t.Helper()
		conn.SetDeadline(time.Now().Add(time.Minute))
		if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return string(body)
	}
	start := time.Now()
	if got := get("/bounded"); got != "hello" {
		t.Fatalf("bounded answer %q", got)
	}
	select {
	case err := <-failed:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the stalled answer: %v; want its deadline exceeded", err)
		}
		if took := time.Since(start); took > answered.Patience+50*time.Second {
			t.Errorf("the stalled answer failed after %v", took)
		}
	case <-time.After(answered.Patience + time.Minute):
		t.Fatal("the answer to a stalled peer is still being written")
	}
	// The bounded answer's deadline has passed (a socket's deadline is
	// the system's time: it is waited out); it was lifted.
	time.Sleep(time.Until(start.Add(answered.Patience + time.Second)))
	if got := get("/plain"); got != "hello" {
		t.Errorf("the next answer on the connection %q", got)
	}
}

// Handler leaves an answer net/http gives a Content-Length (one it holds
// whole, at most 2 KiB) as net/http sends it, not chunked by a flush of
// its own, and a stream flushes each event through it
// (http.ResponseController finds its bounded flush).
func TestHandler(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(answered.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			hello(w)
			return
		}
		rc := http.NewResponseController(w)
		for i := range 2 {
			if i > 0 {
				time.Sleep(100 * time.Millisecond)
			}
			w.Write([]byte("data: x\n\n"))
			if err := rc.Flush(); err != nil {
				t.Errorf("event %d: %v", i, err)
			}
		}
	})))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/small")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ContentLength != 5 || len(resp.TransferEncoding) != 0 || string(body) != "hello" {
		t.Errorf("small answer: length %d, encoding %v, %q", resp.ContentLength, resp.TransferEncoding, body)
	}
	resp, err = http.Get(srv.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "data: x\n\ndata: x\n\n" {
		t.Errorf("stream %q", body)
	}
}
