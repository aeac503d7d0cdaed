package server

import (
	"net/http/httptest"
	"testing"
)

func TestRequestRegion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		host, auth, query, want string
	}{
		{host: "sqs.eu-central-1.localhost:9324", want: "eu-central-1"},
		{host: "SQS.EU-CENTRAL-1.LOCALHOST.", want: "eu-central-1"},
		{host: "eu-west-2.queue.localhost", want: "eu-west-2"},
		{host: "sqs.us-east-2.amazonaws.com", want: "us-east-2"},
		{host: "us-east-2.queue.amazonaws.com", want: "us-east-2"},
		{host: "queue.amazonaws.com", want: ""},
		{host: "sqs.localhost:9324", want: ""},
		{host: "localhost:9324", want: ""},
		{host: "127.0.0.1:9324", want: ""},
		{host: "[::1]:9324", want: ""},
		{host: "sqs.10.0.1", want: ""},
		{host: "sqs.a_b.localhost", want: ""},
		{host: "sqs.eu-central-1.localhost", auth: "AWS4-HMAC-SHA256 Credential=AKID/20260102/ap-south-1/sqs/aws4_request, SignedHeaders=host, Signature=00", want: "ap-south-1"},
		{host: "localhost", auth: "AWS4-HMAC-SHA256 Credential=AKID/20260102/EU-WEST-1/sqs/aws4_request, SignedHeaders=host, Signature=00", want: "eu-west-1"},
		{host: "sqs.eu-central-1.localhost", query: "?X-Amz-Credential=AKID%2F20260102%2Fsa-east-1%2Fsqs%2Faws4_request", want: "sa-east-1"},
		// An Authorization header that does not parse names no region:
		// the verifier, if any, refuses it.
		{host: "sqs.eu-central-1.localhost", auth: "Basic x", want: "eu-central-1"},
	} {
		r := httptest.NewRequest("POST", "http://"+c.host+"/"+c.query, nil)
		r.Host = c.host
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		got, err := requestRegion(r)
		if err != nil || got != c.want {
			t.Errorf("host %s auth %q query %q: region %q, %v; want %q", c.host, c.auth, c.query, got, err, c.want)
		}
	}
	r := httptest.NewRequest("POST", "http://localhost/", nil)
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260102/EU\x00/sqs/aws4_request, SignedHeaders=host, Signature=00")
	if _, err := requestRegion(r); err == nil {
		t.Error("a scope region of control characters was accepted")
	}
}
