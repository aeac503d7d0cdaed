package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/answered"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// smallSendBuffers accepts connections with small send buffers, so that
// a write to a peer that stopped reading stalls after a few KiB.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// stallQueues is how many queues the stalled tests' account has: its
// /queues view is then some 100 KiB, far more than a connection's
// buffers hold.
const stallQueues = 300

// stallServer serves a server of an account of stallQueues queues on a
// free port of 127.0.0.1, with small send buffers; closed holds the
// client addresses of the connections it closed.
func stallServer(t *testing.T) (string, *engine.Engine, *sync.Map) {
	t.Helper()
	e, err := engine.New(engine.Config{Store: memstore.New(), Clock: clock.NewFake(testutil.Epoch)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	for i := range stallQueues {
		name := fmt.Sprintf("a-queue-with-a-name-as-long-as-a-queue-name-may-be-%029d", i)
		if _, err := e.CreateQueue(context.Background(), engine.CreateQueueParams{Account: "000000000000", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := &sync.Map{}
	srv := &http.Server{Handler: server.New(server.Config{Engine: e}), ConnState: func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed.Store(c.RemoteAddr().String(), true)
		}
	}}
	go srv.Serve(smallSendBuffers{ln})
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), e, closed
}

// stall sends GET path to addr over a connection with a small receive
// buffer, reads the first bytes of its answer (its handler runs) and then
// nothing, the connection open until the test ends, as a peer whose host
// is gone (no FIN, no RST). It returns the connection.
func stall(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	status := make([]byte, len("HTTP/1.1 200"))
	if _, err := io.ReadFull(conn, status); err != nil || string(status) != "HTTP/1.1 200" {
		t.Fatalf("%s: the answer began %q, %v; want a 200", path, status, err)
	}
	return conn
}

// closedOf counts the connections of conns the server closed, and says
// how the first still open began.
func closedOf(closed *sync.Map, conns []net.Conn) (int, string) {
	n, open := 0, ""
	for _, c := range conns {
		if _, ok := closed.Load(c.LocalAddr().String()); ok {
			n++
		} else if open == "" {
			c.SetReadDeadline(time.Now().Add(time.Second))
			b := make([]byte, 64)
			m, err := c.Read(b)
			open = fmt.Sprintf("%q (%v)", b[:m], err)
		}
	}
	return n, open
}

// waitFor polls ok each 200 ms until it holds or limit passes.
func waitFor(limit time.Duration, ok func() bool) bool {
	for end := time.Now().Add(limit); ; time.Sleep(200 * time.Millisecond) {
		if ok() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// A dashboard tab that stops reading its live stream (a laptop asleep, a
// network cut: no FIN, no RST) held its stream's goroutine and one of the
// 64 live streams the server runs until TCP gave up, some fifteen
// minutes: 63 such tabs and one reading took them all, and every other
// tab was refused (503). Each event's write is bounded now: the stalled
// streams end within seconds (answered.Patience), their connections
// closed and their slots free, while the tab that reads goes on getting
// the view's snapshots all along (each stream computes its own: no
// stalled one holds up another's).
func TestStalledEventStreams(t *testing.T) {
	t.Parallel()
	addr, e, closed := stallServer(t)
	base := "http://" + addr + "/admin/api/events/queues"
	events := readEvents(t, base)
	nextEvent := func(what string) {
		t.Helper()
		select {
		case n, ok := <-events:
			if !ok {
				t.Fatalf("%s: the reading stream ended", what)
			}
			if n < 64<<10 {
				t.Fatalf("%s: an event of %d bytes; want one larger than the connection's buffers", what, n)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: no event within a minute", what)
		}
	}
	nextEvent("first snapshot")
	start := time.Now()
	var stalled []net.Conn
	for range 63 {
		stalled = append(stalled, stall(t, addr, "/admin/api/events/queues"))
	}
	status := func() int {
		resp, err := http.Get(base)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Every slot taken, on a machine fast enough to see it before the
	// first stalls end; the evidence of the bound is what follows.
	full := waitFor(answered.Patience/2, func() bool { return status() == http.StatusServiceUnavailable })
	if _, err := e.CreateQueue(context.Background(), engine.CreateQueueParams{Account: "000000000000", Name: "one-more"}); err != nil {
		t.Fatal(err)
	}
	nextEvent("snapshot after a change made while the others stall")
	if !waitFor(answered.Patience+time.Minute, func() bool { n, _ := closedOf(closed, stalled); return n == 63 }) {
		n, open := closedOf(closed, stalled)
		t.Fatalf("%d of the 63 stalled streams ended %v after the stalls began; one open began %s", n, time.Since(start), open)
	}
	if got := status(); got != http.StatusOK {
		t.Errorf("a live stream once the stalled ones ended: %d (every slot seen taken before: %v)", got, full)
	}
}

// readEvents reads the event stream at url, sending each data event's
// size.
func readEvents(t *testing.T, url string) <-chan int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := make(chan int, 100)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				events <- len(sc.Text())
			}
		}
	}()
	return events
}

// A peer that stops reading a large answer (a page of the admin API, here
// the /queues view of some 100 KiB) held its handler's goroutine and the
// answer until TCP gave up; its write is bounded now, and the connection
// is closed within seconds.
func TestStalledAnswer(t *testing.T) {
	t.Parallel()
	addr, _, closed := stallServer(t)
	stalled := []net.Conn{stall(t, addr, "/admin/api/queues")}
	start := time.Now()
	if !waitFor(answered.Patience+time.Minute, func() bool { n, _ := closedOf(closed, stalled); return n == 1 }) {
		t.Fatalf("the stalled answer's connection still open %v after", time.Since(start))
	}
}
