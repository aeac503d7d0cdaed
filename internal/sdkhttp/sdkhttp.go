// Package sdkhttp is the HTTP client Baton's own aws-sdk-go-v2 clients send
// through: one that gives Go's transport a request body nobody else can
// close under it.
//
// The SDK (smithy-go's ClientHandler) closes the body it handed to Do as
// soon as Do returns, that is, once the response headers have come. Go's
// transport may still be writing that request then: after it has sent the
// Content-Length bytes it reads the body once more to check that nothing is
// left, and on a busy machine the server's answer can arrive first. The
// closed body then answers that last read with io.EOF from WriteTo, which
// io.Copy reports as an error; the transport takes it for a failed write and
// closes the connection, and the response body still being read fails with
// "use of closed network connection" (net.ErrClosed) although the server
// answered 200. Client hands the transport its own copy of the body
// instead, which only the transport closes.
package sdkhttp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Client returns hc, or the SDK's default client when hc is nil, sending
// every request whose body has a known length with a copy of that body read
// into memory, so that the SDK's early close of its own body cannot end the
// request's write. A request without a body, or of unknown length (a
// stream), goes through unchanged. Client of a client it returned returns
// that client.
func Client(hc aws.HTTPClient) aws.HTTPClient {
	switch c := hc.(type) {
	case nil:
		return ownBody{awshttp.NewBuildableClient()}
	case ownBody:
		return c
	}
	return ownBody{hc}
}

// ownBody is Client's wrapper around the client that sends the requests.
type ownBody struct{ next aws.HTTPClient }

// Do sends req through the wrapped client with its own copy of the body.
func (c ownBody) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength <= 0 {
		return c.next.Do(req)
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close() // the caller's body is done with: Do closes it, as http.Client.Do does
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	own := req.WithContext(req.Context()) // a shallow copy: the caller's request keeps its own Body field
	own.Body = io.NopCloser(bytes.NewReader(b))
	// The transport may send a request again on a fresh connection when it
	// knows the server did not take the first (one found closed before
	// the request was written); it rewinds the body with GetBody.
	own.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return c.next.Do(own)
}
