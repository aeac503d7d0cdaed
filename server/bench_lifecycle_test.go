package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// BenchmarkServeLifecycle is one round of `baton bench`'s lifecycle through
// the server's handler, without the network: a SendMessageBatch of ten
// 1 KiB messages, a ReceiveMessage of ten and a DeleteMessageBatch of them,
// in each wire protocol, unsigned and SigV4-signed, over the memory store.
// ns/msg is the handler's time per message, cpu-ns/msg the process's CPU
// time (garbage collection included); reading the receipt handles out of
// the receive's answer and signing the delete are not counted.
// allocs/op and B/op are per round of ten messages.
func BenchmarkServeLifecycle(b *testing.B) {
	for _, proto := range []string{"json", "query"} {
		for _, signed := range []bool{false, true} {
			name := proto + "/unsigned"
			if signed {
				name = proto + "/signed"
			}
			b.Run(name, func(b *testing.B) { benchLifecycle(b, proto, signed) })
		}
	}
}

const benchQueueURL = "http://127.0.0.1:9324/000000000000/bench"

var benchCred = sigv4.Credential{AccessKeyID: "AKIDBENCHLIFECYCLE", SecretAccessKey: "bench-secret-bench-secret", Account: "000000000000"}

func benchLifecycle(b *testing.B, proto string, signed bool) {
	eng, err := engine.New(engine.Config{Store: memstore.New()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(eng.Close)
	if _, err := eng.CreateQueue(context.Background(), engine.CreateQueueParams{Account: "000000000000", Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	cfg := server.Config{Engine: eng}
	if signed {
		if cfg.Verifier, err = sigv4.NewVerifier(nil, []sigv4.Credential{benchCred}); err != nil {
			b.Fatal(err)
		}
	}
	h := server.New(cfg)
	c := &lifecycleClient{b: b, proto: proto, signed: signed}
	send, receive := c.request("SendMessageBatch", c.sendBody()), c.request("ReceiveMessage", c.receiveBody())
	w := &benchWriter{h: http.Header{}}
	b.ReportAllocs()
	start, untimed := bench.ProcessCPU(), time.Duration(0)
	for b.Loop() {
		w.serve(b, h, send.clone())
		w.serve(b, h, receive.clone())
		b.StopTimer()
		t := bench.ProcessCPU()
		del := c.request("DeleteMessageBatch", c.deleteBody(c.handles(w.body.Bytes())))
		untimed += bench.ProcessCPU() - t
		b.StartTimer()
		w.serve(b, h, del.clone())
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10), "ns/msg")
	// CPU time varies less than wall time on a shared machine.
	b.ReportMetric(float64(bench.ProcessCPU()-start-untimed)/float64(b.N*10), "cpu-ns/msg")
}

// lifecycleClient builds the lifecycle's requests in one protocol.
type lifecycleClient struct {
	b      *testing.B
	proto  string
	signed bool
}

// benchRequest is a request that can be served again: its body and headers.
type benchRequest struct {
	body   []byte
	header http.Header
}

func (r benchRequest) clone() *http.Request {
	req := &http.Request{
		Method: http.MethodPost, URL: &url.URL{Path: "/"}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Host: "127.0.0.1:9324", RemoteAddr: "127.0.0.1:50000", Header: r.header.Clone(),
		Body: nopCloser{bytes.NewReader(r.body)}, ContentLength: int64(len(r.body)),
	}
	return req.WithContext(context.Background())
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func (c *lifecycleClient) request(action string, body []byte) benchRequest {
	c.b.Helper()
	h := http.Header{}
	if c.proto == "json" {
		h.Set("Content-Type", "application/x-amz-json-1.0")
		h.Set("X-Amz-Target", "AmazonSQS."+action)
	} else {
		h.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	}
	r := benchRequest{body: body, header: h}
	if c.signed {
		req := r.clone()
		sum := sha256.Sum256(body)
		creds := aws.Credentials{AccessKeyID: benchCred.AccessKeyID, SecretAccessKey: benchCred.SecretAccessKey}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "sqs", "us-east-1", time.Now()); err != nil {
			c.b.Fatal(err)
		}
		r.header = req.Header
	}
	return r
}

func (c *lifecycleClient) sendBody() []byte {
	body := strings.Repeat("0123456789abcdef", 64)
	if c.proto == "json" {
		var s strings.Builder
		s.WriteString(`{"QueueUrl":"` + benchQueueURL + `","Entries":[`)
		for i := range 10 {
			if i > 0 {
				s.WriteByte(',')
			}
			s.WriteString(`{"Id":"` + strconv.Itoa(i) + `","MessageBody":"` + body + `"}`)
		}
		s.WriteString("]}")
		return []byte(s.String())
	}
	form := url.Values{"Action": {"SendMessageBatch"}, "QueueUrl": {benchQueueURL}}
	for i := 1; i <= 10; i++ {
		p := "SendMessageBatchRequestEntry." + strconv.Itoa(i) + "."
		form.Set(p+"Id", strconv.Itoa(i))
		form.Set(p+"MessageBody", body)
	}
	return []byte(form.Encode())
}

func (c *lifecycleClient) receiveBody() []byte {
	if c.proto == "json" {
		return []byte(`{"QueueUrl":"` + benchQueueURL + `","MaxNumberOfMessages":10,"WaitTimeSeconds":0}`)
	}
	return []byte(url.Values{"Action": {"ReceiveMessage"}, "QueueUrl": {benchQueueURL},
		"MaxNumberOfMessages": {"10"}, "WaitTimeSeconds": {"0"}}.Encode())
}

func (c *lifecycleClient) deleteBody(handles []string) []byte {
	if c.proto == "json" {
		var s strings.Builder
		s.WriteString(`{"QueueUrl":"` + benchQueueURL + `","Entries":[`)
		for i, h := range handles {
			if i > 0 {
				s.WriteByte(',')
			}
			s.WriteString(`{"Id":"` + strconv.Itoa(i) + `","ReceiptHandle":"` + h + `"}`)
		}
		s.WriteString("]}")
		return []byte(s.String())
	}
	form := url.Values{"Action": {"DeleteMessageBatch"}, "QueueUrl": {benchQueueURL}}
	for i, h := range handles {
		p := "DeleteMessageBatchRequestEntry." + strconv.Itoa(i+1) + "."
		form.Set(p+"Id", strconv.Itoa(i))
		form.Set(p+"ReceiptHandle", h)
	}
	return []byte(form.Encode())
}

var xmlHandle = regexp.MustCompile(`<ReceiptHandle>([^<]*)</ReceiptHandle>`)

// handles reads the receipt handles out of a receive's answer, ten of them.
func (c *lifecycleClient) handles(answer []byte) []string {
	var out []string
	if c.proto == "json" {
		var res struct {
			Messages []struct{ ReceiptHandle string }
		}
		if err := json.Unmarshal(answer, &res); err != nil {
			c.b.Fatalf("receive answered %q: %v", answer, err)
		}
		for _, m := range res.Messages {
			out = append(out, m.ReceiptHandle)
		}
	} else {
		for _, m := range xmlHandle.FindAllSubmatch(answer, -1) {
			out = append(out, string(m[1]))
		}
	}
	if len(out) != 10 {
		c.b.Fatalf("received %d messages, want 10: %s", len(out), answer)
	}
	return out
}

// benchWriter is a ResponseWriter reused from request to request.
type benchWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *benchWriter) Header() http.Header { return w.h }

func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

func (w *benchWriter) serve(b *testing.B, h http.Handler, r *http.Request) {
	clear(w.h)
	w.code = 0
	w.body.Reset()
	h.ServeHTTP(w, r)
	if w.code != http.StatusOK {
		b.Fatalf("status %d: %s", w.code, w.body.Bytes())
	}
}
