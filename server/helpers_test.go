package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/protocol/sigv4"
)

// wantAPIError checks that err is an SQS error with the code an SDK reports
// (the Query code from x-amzn-query-error) and the HTTP status.
func wantAPIError(tb testing.TB, err error, code string, status int) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("got no error, want %s (%d)", code, status)
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		tb.Fatalf("got %v (%T), want an API error %s", err, err, code)
	}
	if ae.ErrorCode() != code {
		tb.Errorf("error code = %q (%s), want %q", ae.ErrorCode(), ae.ErrorMessage(), code)
	}
	var re *awshttp.ResponseError
	if !errors.As(err, &re) {
		tb.Fatalf("got %v, want an HTTP response error", err)
	}
	if re.HTTPStatusCode() != status {
		tb.Errorf("HTTP status = %d, want %d", re.HTTPStatusCode(), status)
	}
}

// rawJSON posts an AWS JSON 1.0 request without an SDK, so tests can see the
// exact headers and body.
func rawJSON(tb testing.TB, baseURL, op string, body any) (*http.Response, map[string]any) {
	tb.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		tb.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, baseURL+"/", bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+op)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		tb.Fatalf("%s: response is not JSON: %q", op, raw)
	}
	return resp, out
}

// signNoBody signs r, a request without a body (a GET of /metrics or of the
// admin API), with c's key at time at.
func signNoBody(tb testing.TB, r *http.Request, c sigv4.Credential, at time.Time) {
	tb.Helper()
	empty := sha256.Sum256(nil)
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey},
		r, hex.EncodeToString(empty[:]), "sqs", "us-east-1", at); err != nil {
		tb.Fatal(err)
	}
}
