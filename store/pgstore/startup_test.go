package pgstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/pgstore"
)

// cutProxy forwards TCP connections to a pgtest cluster's unix socket, as
// a load balancer in front of the database does. When a client sends its
// next trigger (they are watched for in order), it cuts every connection
// it has open (that one before the bytes reach the database), as HAProxy
// does to a server it marks down (on-marked-down shutdown-sessions), and
// forwards the connections made after.
type cutProxy struct {
	ln     net.Listener
	socket string

	mu       sync.Mutex
	triggers [][]byte          // those not yet sent, in order
	again    bool              // the first trigger cuts every time it is sent, not once
	open     map[net.Conn]bool // both ends of every connection forwarded
	cut      int               // connections cut
}

// startCutProxy starts a cutProxy in front of the database of dbURL (a URL
// of pgtest's) and returns it with the URL of the database through it;
// it stops when the test ends.
func startCutProxy(t *testing.T, dbURL string, triggers ...string) (*cutProxy, string) {
	t.Helper()
	u, err := neturl.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, socket: fmt.Sprintf("%s/.s.PGSQL.%s", q.Get("host"), q.Get("port")), open: map[net.Conn]bool{}}
	for _, tr := range triggers {
		p.triggers = append(p.triggers, []byte(tr))
	}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.cutAll()
	})
	return p, fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", u.User.Username(), ln.Addr(), pgtest.DatabaseName(dbURL))
}

func (p *cutProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("unix", p.socket)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.open[client], p.open[server] = true, true
		p.mu.Unlock()
		go p.forward(client, server, true)
		go p.forward(server, client, false)
	}
}

// forward copies from one end to the other until either closes, watching
// a client's bytes for the triggers.
func (p *cutProxy) forward(from, to net.Conn, watch bool) {
	defer from.Close()
	defer to.Close()
	buf := make([]byte, 32<<10)
	var tail []byte // the end of what came before, for a trigger split over two reads
	for {
		n, err := from.Read(buf)
		if n > 0 {
			if watch && p.fired(append(tail, buf[:n]...)) {
				p.cutAll()
				return
			}
			tail = append(tail[:0], buf[max(0, n-64):n]...)
			if _, err := to.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// fired reports whether sent holds the next trigger, and unless again
// moves on to the one after.
func (p *cutProxy) fired(sent []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.triggers) == 0 || !bytes.Contains(sent, p.triggers[0]) {
		return false
	}
	if !p.again {
		p.triggers = p.triggers[1:]
	}
	return true
}

// cutEveryTime makes the first trigger cut the connections every time it
// is sent.
func (p *cutProxy) cutEveryTime() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.again = true
}

// cutOn makes the proxy cut its connections every time a client sends
// trigger, from now on, until stopCutting.
func (p *cutProxy) cutOn(trigger string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.triggers, p.again = [][]byte{[]byte(trigger)}, true
}

// stopCutting makes the proxy forward everything from now on.
func (p *cutProxy) stopCutting() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.triggers = nil
}

// cutAll closes both ends of every connection open.
func (p *cutProxy) cutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.open {
		c.Close()
		p.cut++
	}
	clear(p.open)
}

func (p *cutProxy) cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// A node whose connections are cut right after start (a load balancer
// that counted a standby up until its checks failed, and then cut what it
// had sent there) retries its start-up check of the database session, with
// a log line per attempt saying why, and starts: it used to exit with
// "pgstore: check the database session: NOTIFY: conn closed". So do the
// reads that follow Open in `baton serve`: the receipt key, and the
// database's clock (which a node that cannot read it at start goes without
// for a minute).
func TestOpenRetriesSessionCheckOnCutConnections(t *testing.T) {
	t.Parallel()
	proxy, url := startCutProxy(t, pgtest.MustDatabase(t), "pg_notify", "receipt_key", "clock_timestamp")
	logs := &logbuf.Buffer{}
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), ConnectTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Open through connections cut at its session check: %v\n%s", err, logs)
	}
	defer s.Close()
	if proxy.cuts() == 0 {
		t.Fatalf("the proxy cut no connection: the session check sent no pg_notify through it\n%s", logs)
	}
	if !strings.Contains(logs.String(), `msg="PostgreSQL session check failed, retrying"`) ||
		!strings.Contains(logs.String(), "problem=") {
		t.Errorf("no log line says the session check is retried, and why:\n%s", logs)
	}
	cutAtOpen := proxy.cuts()
	if _, err := s.ReceiptKey(ctx); err != nil {
		t.Errorf("the receipt key, read through connections cut: %v", err)
	}
	cutAtKey := proxy.cuts()
	if cutAtKey == cutAtOpen {
		t.Errorf("the proxy cut no connection at the receipt key's read")
	}
	if _, err := s.ClockOffset(ctx, time.Now); err != nil {
		t.Errorf("the database's clock, read through connections cut: %v", err)
	}
	if proxy.cuts() == cutAtKey {
		t.Errorf("the proxy cut no connection at the read of the database's clock")
	}
	// Connections cut while idle in the pool are not the database down
	// (TestPingThroughIdleConnectionsCut).
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping after connections were cut: %v", err)
	}
	t.Logf("%d connections cut; the log:\n%s", proxy.cuts(), logs)
}

// A session check whose connections are cut every time gives up at the
// connect timeout, and says what failed and how often.
func TestOpenGivesUpOnSessionCheckCutEveryTime(t *testing.T) {
	t.Parallel()
	proxy, url := startCutProxy(t, pgtest.MustDatabase(t), "pg_notify")
	proxy.cutEveryTime()
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ConnectTimeout: 3 * time.Second})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded through connections cut at every session check")
	}
	if msg := err.Error(); !strings.Contains(msg, "check the database session: NOTIFY") || !strings.Contains(msg, "gave up after") {
		t.Errorf("Open: %v; want the session check's last failure and that it gave up", err)
	}
	t.Logf("Open: %v", err)
}

// A definite refusal at start (a wrong password, a missing permission) is
// not waited out: Open fails at once with PostgreSQL's reason, where it
// used to retry it for the whole connect timeout and then call the
// database unreachable.
func TestOpenRefusalFailsAtOnce(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	ctx := t.Context()
	if err := pg.RequirePasswords(ctx, "baton_pw", "right"); err != nil {
		t.Fatal(err)
	}
	db := pgtest.DatabaseName(pg.MustDatabase(t))
	admin, err := pgx.Connect(ctx, pg.URL(db))
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.Exec(ctx, "REVOKE CONNECT ON DATABASE "+db+" FROM PUBLIC")
	admin.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, userinfo, want string
	}{
		{"wrong password", "baton_pw:wrong", "SQLSTATE 28P01"},
		{"no CONNECT on the database", "baton_pw:right", "SQLSTATE 42501"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := strings.Replace(pg.URL(db), "postgres@", tt.userinfo+"@", 1)
			logs := &logbuf.Buffer{}
			start := time.Now()
			s, err := pgstore.Open(ctx, url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), ConnectTimeout: 30 * time.Second})
			took := time.Since(start)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), "refused the connection") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open: %v; want the refusal with PostgreSQL's reason (%s)", err, tt.want)
			}
			if took > 10*time.Second || strings.Contains(logs.String(), "retrying") {
				t.Errorf("Open took %v to fail, retrying a refusal:\n%s", took, logs)
			}
			t.Logf("Open, after %v: %v", took.Round(time.Millisecond), err)
		})
	}
}
