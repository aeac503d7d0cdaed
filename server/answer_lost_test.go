package server_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// startLogged serves the built handler on a free port of 127.0.0.1, with
// a fake clock and its log (debug level) in logs; closed counts the
// connections closed, once their requests are done.
func startLogged(t *testing.T, logs *logbuf.Buffer, closed *atomic.Int32) (string, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(testutil.Epoch)
	e, err := engine.New(engine.Config{Store: memstore.New(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: server.New(server.Config{Engine: e,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed {
				closed.Add(1)
			}
		}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), clk
}

// receiveRequest is a ReceiveMessage of up to 10 messages of queueURL in
// the protocol given ("json" or "query"), by the user agent ua.
func receiveRequest(t *testing.T, proto, base, queueURL, ua string) *http.Request {
	t.Helper()
	var req *http.Request
	var err error
	if proto == "json" {
		req, err = http.NewRequest(http.MethodPost, base+"/", strings.NewReader(fmt.Sprintf(`{"QueueUrl":%q,"MaxNumberOfMessages":10}`, queueURL)))
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "AmazonSQS.ReceiveMessage")
	} else {
		form := url.Values{"Action": {"ReceiveMessage"}, "Version": {"2012-11-05"}, "QueueUrl": {queueURL}, "MaxNumberOfMessages": {"10"}}
		req, err = http.NewRequest(http.MethodPost, base+"/", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", ua)
	return req
}

// receiveCut sends req over a TCP connection of its own with a small
// receive buffer, reads the first bytes of the answer's status line (the
// receive was made and its answer is being written) and closes the
// socket with the rest unread: the answer, far larger than the
// connection's buffers, cannot have been written whole.
func receiveCut(t *testing.T, base string, req *http.Request) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	status := make([]byte, len("HTTP/1.1 200"))
	if _, err := io.ReadFull(conn, status); err != nil || string(status) != "HTTP/1.1 200" {
		t.Fatalf("answer began %q, %v; want a 200", status, err)
	}
}

// A client that leaves while a receive's answer is being written, after
// the receive was recorded: the write of the answer (10 messages of
// almost 1 MiB, far more than the connection's buffers hold) fails, and
// the leases it handed out are held by no one. When they lapse and the
// client polls again, the doctor names client-left, not a failing handler
// (which it named before: the lease read as its client's); in either
// protocol.
func TestReceiveAnswerLostAsWritten(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"json", "query"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			logs, closed := &logbuf.Buffer{}, &atomic.Int32{}
			base, clk := startLogged(t, logs, closed)
			c := testutil.NewClient(base)
			q := "big-" + proto
			out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q),
				Attributes: map[string]string{"VisibilityTimeout": "30", "MaximumMessageSize": "1048576"}})
			if err != nil {
				t.Fatal(err)
			}
			queueURL := *out.QueueUrl
			body := strings.Repeat("x", 1<<20-1024)
			for range 10 {
				mustSend(t, c, queueURL, body)
			}
			receiveCut(t, base, receiveRequest(t, proto, base, queueURL, "cut-client/1.0"))
			// The write fails once the server sees the connection reset;
			// the handler is done when the server closes the connection.
			testutil.CheckFor(t, 30*time.Second, func() error {
				if closed.Load() == 0 {
					return fmt.Errorf("the cut connection is not closed yet")
				}
				return nil
			})
			clk.Advance(31 * time.Second) // the leases lapsed; the client polls again
			resp, err := http.DefaultClient.Do(receiveRequest(t, proto, base, queueURL, "cut-client/1.0"))
			if err != nil {
				t.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, bufio.NewReader(resp.Body))
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || n < 10<<20-10*1024 {
				t.Fatalf("the poll again: %s, %d bytes; want the 10 messages back", resp.Status, n)
			}
			clk.Advance(time.Second)
			var rep server.LeaseReportJSON
			getJSON(t, base+"/admin/api/queues/"+q+"/leases", &rep)
			if rep.Diagnosis != ledger.DiagnosisClientLeft || len(rep.Findings) != 1 || rep.Findings[0].Leases != 10 {
				t.Errorf("diagnosis %s, findings %+v; want client-left of the 10 leases\n%s", rep.Diagnosis, rep.Findings, rep.Advice)
			}
			// What the server saw was the write failing, not a client gone
			// before it.
			if text := logs.String(); !strings.Contains(text, "the answer of a receive reached no client") || !strings.Contains(text, "leases=10") ||
				strings.Contains(text, "had left before the answer was written") {
				t.Errorf("want the 10 leases of an answer whose write failed logged:\n%s", text)
			}
		})
	}
}
