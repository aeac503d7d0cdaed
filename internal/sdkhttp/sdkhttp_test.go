package sdkhttp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/baton-sqs/baton/internal/sdkhttp"
)

// queues is how many queue URLs the test server answers ListQueues with:
// enough that most of the answer is still unread (beyond the transport's
// 4 KiB read buffer) when the SDK starts reading it.
const queues = 1000

// The interleaving a busy machine makes by chance, made every time: the
// transport has sent the whole request but not finished its write when the
// answer arrives and the SDK, done with Do, closes its request body. Through
// Client the write still ends cleanly, the connection stays open and the
// 200 is read whole.
func TestAnswerBeforeWriteEnds(t *testing.T) {
	t.Parallel()
	r := listDuringWrite(t, sdkhttp.Client)
	if r.err != nil {
		t.Fatalf("ListQueues: %v", r.err)
	}
	if r.urls != queues {
		t.Errorf("ListQueues answered %d queue URLs, want %d", r.urls, queues)
	}
	if r.writeErr != nil {
		t.Errorf("the transport's write of the request failed: %v", r.writeErr)
	}
	if r.clientClosed {
		t.Error("the client closed the connection while the answer was being read")
	}
}

// The same interleaving through the SDK's client as it comes fails: the
// defect Client works around. When this test fails, the SDK no longer
// closes the body under the transport, and Client can go.
func TestPlainSDKClientLosesTheAnswer(t *testing.T) {
	t.Parallel()
	r := listDuringWrite(t, func(hc aws.HTTPClient) aws.HTTPClient { return hc })
	t.Logf("the plain client's call: %v (the write: %v)", r.err, r.writeErr)
	if !errors.Is(r.err, net.ErrClosed) || r.writeErr == nil || !r.clientClosed {
		t.Errorf("ListQueues through the plain client: err %v, write error %v, connection closed by the client %v; want net.ErrClosed after a failed write",
			r.err, r.writeErr, r.clientClosed)
	}
}

// Client is idempotent and fills in the SDK's default client.
func TestClientWrapsOnce(t *testing.T) {
	t.Parallel()
	c := sdkhttp.Client(nil)
	if c == nil {
		t.Fatal("Client(nil) is nil")
	}
	if again := sdkhttp.Client(c); again != c {
		t.Errorf("Client of a Client wrapped it again: %#v", again)
	}
}

// outcome is how one ListQueues call of listDuringWrite ended.
type outcome struct {
	err          error // the call's
	urls         int   // queue URLs answered
	writeErr     error // the transport's write of the request, as httptrace saw it
	clientClosed bool  // whether the client closed the connection before the call returned
}

// listDuringWrite calls ListQueues through wrap(a client of its own) against
// a server answering 1,000 queue URLs, holding the transport's write of the
// request after its last byte is sent until the SDK has had the answer's
// headers back from Do (and closed its request body), then letting it
// finish before the SDK reads the answer's body.
func listDuringWrite(t *testing.T, wrap func(aws.HTTPClient) aws.HTTPClient) outcome {
	t.Helper()
	urls := make([]string, queues)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://127.0.0.1/000000000000/queue-%04d", i)
	}
	answer, err := json.Marshal(map[string][]string{"QueueUrls": urls})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Requestid", "00000000-0000-0000-0000-000000000000")
		w.Write(answer)
	}))
	t.Cleanup(srv.Close)

	g := newGate()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &gatedConn{Conn: c, g: g}, nil
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c := sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(srv.URL),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       wrap(&http.Client{Transport: tr}),
		APIOptions:       []func(*middleware.Stack) error{g.holdAfterDo},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) { g.wrote <- i.Err }})
	out, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
	r := outcome{err: err, writeErr: g.writeErr}
	if out != nil {
		r.urls = len(out.QueueUrls)
	}
	select {
	case <-g.closed:
		r.clientClosed = true
	default:
	}
	if g.failure != "" {
		t.Fatal(g.failure)
	}
	return r
}

// gate holds the transport's write of the first request after its last
// byte until the SDK has had Do's answer.
type gate struct {
	release     chan struct{} // closed once Do has returned to the SDK
	releaseOnce sync.Once
	wrote       chan error    // the write's end, from httptrace
	closed      chan struct{} // closed when the client closes the connection
	closeOnce   sync.Once

	mu   sync.Mutex
	sent []byte // what the client wrote before the hold
	held bool

	writeErr error  // set by holdAfterDo
	failure  string // what went wrong with the set-up, if anything did
}

func newGate() *gate {
	return &gate{release: make(chan struct{}), wrote: make(chan error, 1), closed: make(chan struct{})}
}

// holdAfterDo is a middleware next to the transport: when Do has returned
// (and the SDK has closed its request body) it lets the held write go on,
// waits for the write to end and, if it failed, for the client to close the
// connection, as the transport does; then the SDK reads the answer.
func (g *gate) holdAfterDo(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("HoldWriteUntilAnswered",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			g.releaseOnce.Do(func() { close(g.release) })
			select {
			case g.writeErr = <-g.wrote:
			case <-time.After(20 * time.Second):
				g.failure = "the transport never finished writing the request"
				return out, md, err
			}
			if g.writeErr != nil {
				select {
				case <-g.closed:
				case <-time.After(20 * time.Second):
					g.failure = "the write failed but the connection stayed open 20s"
				}
			}
			return out, md, err
		}), middleware.After)
}

// gatedConn is a client connection whose write that completes the first
// request blocks, its bytes sent, until the gate is released.
type gatedConn struct {
	net.Conn
	g *gate
}

func (c *gatedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.g.mu.Lock()
	c.g.sent = append(c.g.sent, p[:n]...)
	hold := !c.g.held && requestComplete(c.g.sent)
	c.g.held = c.g.held || hold
	c.g.mu.Unlock()
	if hold {
		select {
		case <-c.g.release:
		case <-time.After(20 * time.Second):
		}
	}
	return n, err
}

func (c *gatedConn) Close() error {
	c.g.closeOnce.Do(func() { close(c.g.closed) })
	return c.Conn.Close()
}

// requestComplete reports whether sent holds a whole request: its header
// and Content-Length bytes of body.
func requestComplete(sent []byte) bool {
	end := bytes.Index(sent, []byte("\r\n\r\n"))
	if end < 0 {
		return false
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(sent[:end+4])))
	if err != nil {
		return false
	}
	return int64(len(sent)) >= int64(end+4)+req.ContentLength
}
