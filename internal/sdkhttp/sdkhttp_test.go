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
	"strings"
	"sync"
	"sync/atomic"
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
	r := newRig(t, sdkhttp.Client, listAnswer(t), 1)
	out, err := r.c.ListQueues(r.ctx(t), &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatalf("ListQueues: %v", err)
	}
	if len(out.QueueUrls) != queues {
		t.Errorf("ListQueues answered %d queue URLs, want %d", len(out.QueueUrls), queues)
	}
	r.check(t)
	if r.g.writes[0] != nil {
		t.Errorf("the transport's write of the request failed: %v", r.g.writes[0])
	}
	if r.g.clientClosed() {
		t.Error("the client closed the connection while the answer was being read")
	}
}

// With the SDK's own retries, as baton's client commands have them, a
// message whose answer came early is sent once.
func TestSendAnsweredBeforeWriteEndsGoesOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, sdkhttp.Client, sendAnswer, 0)
	if _, err := r.c.SendMessage(r.ctx(t), sendInput(r)); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	r.check(t)
	if n := r.requests.Load(); n != 1 {
		t.Errorf("the server had %d SendMessage requests for one call, want 1", n)
	}
}

// The same interleavings through the SDK's client as it comes: the 200 is
// lost to net.ErrClosed, and with the SDK's retries (which retry
// net.ErrClosed) a message the server took is sent again. This is the defect
// Client works around; when this test fails, the SDK no longer closes the
// body under the transport, and Client can go.
func TestPlainSDKClientLosesTheAnswer(t *testing.T) {
	t.Parallel()
	plain := func(hc aws.HTTPClient) aws.HTTPClient { return hc }
	r := newRig(t, plain, listAnswer(t), 1)
	_, err := r.c.ListQueues(r.ctx(t), &sqs.ListQueuesInput{})
	r.check(t)
	t.Logf("ListQueues through the plain client: %v (the write: %v)", err, r.g.writes[0])
	if !errors.Is(err, net.ErrClosed) || r.g.writes[0] == nil || !r.g.clientClosed() {
		t.Errorf("ListQueues through the plain client: err %v, write error %v, connection closed by the client %v; want net.ErrClosed after a failed write",
			err, r.g.writes[0], r.g.clientClosed())
	}

	r = newRig(t, plain, sendAnswer, 0)
	_, err = r.c.SendMessage(r.ctx(t), sendInput(r))
	r.check(t)
	// More than twice when a retry meets the same race by chance.
	if n := r.requests.Load(); n < 2 {
		t.Errorf("SendMessage through the plain client with the SDK's retries: err %v, %d requests; want the message sent again", err, n)
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

// The copy Client sends can be rewound (GetBody), so that the transport
// may send it again on a fresh connection when it knows the server did not
// take it, as it can a request made by http.NewRequest.
func TestClientBodyRewinds(t *testing.T) {
	t.Parallel()
	var sent *http.Request
	next := doFunc(func(r *http.Request) (*http.Response, error) {
		sent = r
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", io.NopCloser(strings.NewReader("Action=ListQueues")))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len("Action=ListQueues"))
	if _, err := sdkhttp.Client(next).Do(req); err != nil {
		t.Fatal(err)
	}
	if sent.GetBody == nil {
		t.Fatal("the request sent has no GetBody")
	}
	for range 2 {
		body, err := sent.GetBody()
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(body); string(b) != "Action=ListQueues" {
			t.Errorf("GetBody gave %q, want the request's body", b)
		}
	}
}

// doFunc is an aws.HTTPClient of a function.
type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// listAnswer is a ListQueues answer of 1,000 queue URLs.
func listAnswer(t *testing.T) []byte {
	urls := make([]string, queues)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://127.0.0.1/000000000000/queue-%04d", i)
	}
	answer, err := json.Marshal(map[string][]string{"QueueUrls": urls})
	if err != nil {
		t.Fatal(err)
	}
	return answer
}

// sendAnswer is a SendMessage answer for the body "hello", padded past the
// transport's read buffer with a member the SDK ignores.
var sendAnswer = []byte(`{"MessageId":"00000000-0000-0000-0000-000000000000","MD5OfMessageBody":"5d41402abc4b2a76b9719d911017c592","Padding":"` +
	strings.Repeat("x", 64<<10) + `"}`)

func sendInput(r *rig) *sqs.SendMessageInput {
	return &sqs.SendMessageInput{QueueUrl: aws.String(r.url + "/000000000000/q"), MessageBody: aws.String("hello")}
}

// rig is an SQS client of wrap(a client of its own) and a server that
// answers every request with the same answer, counting them. The
// transport's write of the first request is held after its last byte is
// sent until the SDK has had the answer's headers back from Do (and closed
// its request body), then let finish before the SDK reads the answer's
// body (see gate).
type rig struct {
	c        *sqs.Client
	url      string
	g        *gate
	requests atomic.Int64
}

// newRig starts a rig; attempts is the SDK's RetryMaxAttempts (0: the
// SDK's default, three).
func newRig(t *testing.T, wrap func(aws.HTTPClient) aws.HTTPClient, answer []byte, attempts int) *rig {
	t.Helper()
	r := &rig{g: newGate()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		r.requests.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Requestid", "00000000-0000-0000-0000-000000000000")
		w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &gatedConn{Conn: c, g: r.g}, nil
	}}
	t.Cleanup(tr.CloseIdleConnections)
	r.c = sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(srv.URL),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		RetryMaxAttempts: attempts,
		HTTPClient:       wrap(&http.Client{Transport: tr}),
		APIOptions:       []func(*middleware.Stack) error{r.g.holdAfterDo},
	})
	return r
}

// ctx is the context of a call through the rig: at most 30 s, with the
// trace that tells the gate how each write ended.
func (r *rig) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) { r.g.wrote <- i.Err }})
}

// check fails the test if the rig's interleaving did not happen.
func (r *rig) check(t *testing.T) {
	t.Helper()
	if r.g.failure != "" {
		t.Fatal(r.g.failure)
	}
	if len(r.g.writes) == 0 {
		t.Fatal("no request was written")
	}
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

	writes  []error // how each attempt's write ended, set by holdAfterDo
	failure string  // what went wrong with the set-up, if anything did
}

func newGate() *gate {
	return &gate{release: make(chan struct{}), wrote: make(chan error, 10), closed: make(chan struct{})}
}

// clientClosed reports whether the client has closed the connection.
func (g *gate) clientClosed() bool {
	select {
	case <-g.closed:
		return true
	default:
		return false
	}
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
			var werr error
			select {
			case werr = <-g.wrote:
				g.writes = append(g.writes, werr)
			case <-time.After(20 * time.Second):
				g.failure = "the transport never finished writing the request"
				return out, md, err
			}
			if werr != nil {
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
