package server_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/internal/testutil"
)

// TestSuccessAnswersDeclareTheirLength: a success answer declares its
// Content-Length, in each form an SQS answer takes (AWS JSON 1.0, Query
// XML, Query asking for JSON), also one far past the 2 KiB below which
// net/http would set the length itself. With the length declared, an
// answer cut after its 200 status line is an error to any client: over
// HTTP/1.1 net/http closes a connection whose answer is short of it, and
// over HTTP/2 Go's client reads a stream that ends short of it as
// io.ErrUnexpectedEOF (an SDK says "deserialization failed, unexpected
// EOF"). A chunked answer, or an HTTP/2 one without a length, that its
// writer stopped early would end cleanly and read as complete.
func TestSuccessAnswersDeclareTheirLength(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	queueURL := srv.MustCreateQueue(t, "framed", nil)
	for range 10 {
		mustSend(t, srv.Client, queueURL, strings.Repeat("x", 1000))
	}
	// Each receive leaves the messages visible (VisibilityTimeout 0), so
	// that each answer holds all ten: some 10 KiB.
	form := url.Values{"Action": {"ReceiveMessage"}, "Version": {"2012-11-05"}, "QueueUrl": {queueURL},
		"MaxNumberOfMessages": {"10"}, "VisibilityTimeout": {"0"}}.Encode()
	forms := []struct {
		name, contentType, target, accept, body string
	}{
		{"json", "application/x-amz-json-1.0", "AmazonSQS.ReceiveMessage", "",
			`{"QueueUrl":"` + queueURL + `","MaxNumberOfMessages":10,"VisibilityTimeout":0}`},
		{"query xml", "application/x-www-form-urlencoded", "", "", form},
		{"query json", "application/x-www-form-urlencoded", "", "application/json", form},
	}
	for _, f := range forms {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(f.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", f.contentType)
		if f.target != "" {
			req.Header.Set("X-Amz-Target", f.target)
		}
		if f.accept != "" {
			req.Header.Set("Accept", f.accept)
		}
		resp := do(t, req)
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusOK || strings.Count(body, strings.Repeat("x", 1000)) != 10 {
			t.Fatalf("%s: status %d, %d bytes; want 200 and the ten messages", f.name, resp.StatusCode, len(body))
		}
		if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(body)) || len(resp.TransferEncoding) > 0 {
			t.Errorf("%s: Content-Length %q, Transfer-Encoding %q for a body of %d bytes; want the body's length declared",
				f.name, got, resp.TransferEncoding, len(body))
		}
	}
}
