package proxy_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/proxy"
	"github.com/baton-sqs/baton/server"
)

// bigReceive is a ReceiveMessage of up to 10 messages of queueURL sent to
// the proxy at base by the user agent ua.
func bigReceive(t *testing.T, base, queueURL, ua string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(fmt.Sprintf(`{"QueueUrl":%q,"MaxNumberOfMessages":10}`, queueURL)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.ReceiveMessage")
	req.Header.Set("User-Agent", ua)
	return req
}

// A client that leaves while the proxy writes it a receive's answer,
// after the proxy recorded the leases as the client's: the write of the
// answer (10 messages of almost 1 MiB, far more than the connection's
// buffers hold) fails, and the proxy tells its ledger that those leases
// are held by no one. When they lapse and the client polls again, the
// doctor names client-left, not a failing handler.
func TestReceiveAnswerLostAsWritten(t *testing.T) {
	logs := &logbuf.Buffer{}
	e := newEnv(t, func(c *proxy.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	q := e.up.Queue(t, "big?VisibilityTimeout=30&MaximumMessageSize=1048576")
	body := strings.Repeat("x", 1<<20-1024)
	for range 10 {
		if _, err := e.up.Client().SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{}) // the proxy is done with the receive
	var once sync.Once
	e.front.watch(nil, func(r *http.Request) {
		if r.Header.Get("X-Amz-Target") == "AmazonSQS.ReceiveMessage" {
			once.Do(func() { close(done) })
		}
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if err := bigReceive(t, e.url, q, "cut-client/1.0").Write(conn); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	status := make([]byte, len("HTTP/1.1 200"))
	if _, err := io.ReadFull(conn, status); err != nil || string(status) != "HTTP/1.1 200" {
		t.Fatalf("answer began %q, %v; want a 200", status, err)
	}
	conn.Close() // the rest unread: the proxy's write fails
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not finish the receive within 30 s")
	}
	e.front.watch(nil, nil)
	e.at(31) // the leases lapsed; the client polls again
	resp, err := http.DefaultClient.Do(bigReceive(t, e.url, q, "cut-client/1.0"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n < 10<<20-10*1024 {
		t.Fatalf("the poll again: %s, %d bytes; want the 10 messages back", resp.Status, n)
	}
	e.at(32)
	var viaProxy server.LeaseReportJSON
	e.get(t, e.url, "/admin/api/queues/big/leases", &viaProxy)
	if viaProxy.Diagnosis != ledger.DiagnosisClientLeft || len(viaProxy.Findings) != 1 || viaProxy.Findings[0].Leases != 10 {
		t.Errorf("the proxy diagnoses %s (%+v), want client-left of the 10 leases: %s", viaProxy.Diagnosis, viaProxy.Findings, viaProxy.Advice)
	}
	if text := logs.String(); !strings.Contains(text, "a receive's answer reached no client as it was written") || !strings.Contains(text, "leased=10") {
		t.Errorf("want the lost answer of 10 leases logged:\n%s", text)
	}
}
