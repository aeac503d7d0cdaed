package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// blackhole listens on a free port of 127.0.0.1 and relays one connection
// to target: the request whole, then the first bytes of the answer (its
// status line and some headers), after which it reads nothing more of the
// server and sends nothing more to the client, holding both connections
// open: a peer whose host is gone, seen from the server.
func blackhole(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		t.Cleanup(func() { client.Close() })
		upstream, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		t.Cleanup(func() { upstream.Close() })
		upstream.(*net.TCPConn).SetReadBuffer(4096)
		go io.Copy(upstream, client)
		first := make([]byte, 64)
		if n, err := upstream.Read(first); err == nil {
			client.Write(first[:n])
		}
	}()
	return ln.Addr().String()
}

// A real SDK receive of a large answer (ten messages of almost 1 MiB)
// through a connection that stops reading after the answer's first bytes:
// the built binary's write of the answer fails within seconds (each piece
// must go out within internal/answered's Patience), where it waited until
// TCP gave up (some fifteen minutes) with its leases read as held by a
// live client; once they lapse, `baton doctor` names client-left.
func TestStalledPeerReadsClientLeft(t *testing.T) {
	t.Parallel()
	p := startBaton(t)
	c := testutil.NewClient(p.URL)
	ctx := context.Background()
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("stalled"),
		Attributes: map[string]string{"VisibilityTimeout": "30", "MaximumMessageSize": "1048576"}})
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", 1<<20-1024)
	for range 10 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: &body}); err != nil {
			t.Fatal(err)
		}
	}
	stalled := sqs.New(sqs.Options{
		BaseEndpoint: aws.String("http://" + blackhole(t, strings.TrimPrefix(p.URL, "http://"))),
		Region:       "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDSTALLED", "secret", ""),
		RetryMaxAttempts: 1, HTTPClient: sdkhttp.Client(&http.Client{Timeout: 3 * time.Minute}),
	})
	received := make(chan error, 1)
	go func() {
		_, err := stalled.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl, MaxNumberOfMessages: 10})
		received <- err
	}()
	// The leases lapse 30 s after the receive; the doctor reads them then.
	testutil.CheckFor(t, 3*time.Minute, func() error {
		rep := doctorJSON(t, p.URL, "stalled")
		if rep.Diagnosis != ledger.DiagnosisClientLeft || len(rep.Findings) != 1 || rep.Findings[0].Leases != 10 {
			return fmt.Errorf("diagnosis %s, findings %+v; want client-left of the 10 leases\n%s", rep.Diagnosis, rep.Findings, rep.Advice)
		}
		return nil
	})
	select {
	case err := <-received:
		t.Logf("the stalled client's receive: %v", err)
	default: // still waiting for an answer that will not come
	}
}

// doctorJSON is `baton doctor --json` of queue on the server at url.
func doctorJSON(t *testing.T, url, queue string) server.LeaseReportJSON {
	t.Helper()
	out, err := exec.Command(batonBin, "doctor", "--endpoint", url, "--json", queue).Output()
	if err != nil {
		t.Fatalf("baton doctor: %v", err)
	}
	var rep server.LeaseReportJSON
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("doctor --json printed %q: %v", out, err)
	}
	return rep
}
