package sigv4_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// Authorization headers as aws-sdk-go-v2, botocore and hand-rolled clients
// send them, and broken ones.
var authorizationSeeds = []string{
	"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/us-east-1/sqs/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-date;x-amz-target, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
	"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/us-east-1/sqs/aws4_request,SignedHeaders=host;x-amz-date,Signature=00",
	"AWS4-HMAC-SHA256 Signature=00, Credential=AKIDEXAMPLE/20260102/eu-west-1/sqs/aws4_request, SignedHeaders=Host;X-Amz-Date",
	"AWS4-HMAC-SHA256   Credential = K/20260102/r/sqs/aws4_request ,  SignedHeaders = host , Signature = ab , Extra=1",
	"AWS4-HMAC-SHA256",
	"AWS4-HMAC-SHA256 ",
	"AWS4-HMAC-SHA256 Credential=K/20260102/r/sqs/aws4_request",
	"AWS4-HMAC-SHA256 Credential=K/a/b, SignedHeaders=host, Signature=00",
	"AWS4-HMAC-SHA256 Credential=K/1/2/3/4/5, SignedHeaders=host, Signature=00",
	"AWS4-HMAC-SHA256 Credential=, SignedHeaders=, Signature=",
	"AWS4-HMAC-SHA256 Credential=K/20260102/r/sqs/aws4_request, Credential=K/20260102/r/sqs/aws4_request, SignedHeaders=host, Signature=00",
	"AWS4-HMAC-SHA256 Credential K/20260102/r/sqs/aws4_request",
	"AWS4-HMAC-SHA256 ,,,=,",
	"AWS4-HMAC-SHA256 Credential=K/20260102/r/sqs/aws4_request, SignedHeaders=;;, Signature=\x00\xff",
	"AWS AKIDEXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=",
	"Bearer eyJhbGciOiJIUzI1NiJ9",
	"",
	"\t \n",
	"aws4-hmac-sha256 Credential=K/20260102/r/sqs/aws4_request, SignedHeaders=host, Signature=00",
	strings.Repeat("AWS4-HMAC-SHA256 Credential=", 100),
}

// FuzzParseAuthorization checks that no header makes the parser panic, that
// every refusal is IncompleteSignature, and that what it accepts is
// consistent: a key id without '/', a non-empty signature and signed-header
// list in lower case.
func FuzzParseAuthorization(f *testing.F) {
	for _, s := range authorizationSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		a, err := sigv4.ParseAuthorization(header)
		if err != nil {
			if !baton.IsCode(err, baton.ErrIncompleteSignature) {
				t.Fatalf("ParseAuthorization(%q): error %v, want IncompleteSignature", header, err)
			}
			if n := len(baton.AsError(err).Message); n > 4096 {
				t.Fatalf("ParseAuthorization(%q): message of %d bytes", header, n)
			}
			return
		}
		if strings.Contains(a.AccessKeyID, "/") || a.Signature == "" || len(a.SignedHeaders) == 0 {
			t.Fatalf("ParseAuthorization(%q) = %+v: key id with '/', no signature or no signed headers", header, a)
		}
		for _, h := range a.SignedHeaders {
			if h != strings.ToLower(h) {
				t.Fatalf("ParseAuthorization(%q): signed header %q not lower-cased", header, h)
			}
		}
		if got := a.AccessKeyID + "/" + a.Scope.String(); !strings.Contains(header, got) {
			t.Fatalf("ParseAuthorization(%q): credential %q is not in the header", header, got)
		}
	})
}

func TestParseAuthorization(t *testing.T) {
	t.Parallel()
	a, err := sigv4.ParseAuthorization(authorizationSeeds[2])
	if err != nil {
		t.Fatal(err)
	}
	want := sigv4.Authorization{
		AccessKeyID:   "AKIDEXAMPLE",
		Scope:         sigv4.Scope{Date: "20260102", Region: "eu-west-1", Service: "sqs", Terminator: "aws4_request"},
		SignedHeaders: []string{"host", "x-amz-date"},
		Signature:     "00",
	}
	if a.AccessKeyID != want.AccessKeyID || a.Scope != want.Scope || !slices.Equal(a.SignedHeaders, want.SignedHeaders) || a.Signature != want.Signature {
		t.Errorf("got %+v, want %+v", a, want)
	}
	a, err = sigv4.ParseAuthorization(authorizationSeeds[3])
	if err != nil {
		t.Fatal(err)
	}
	if a.AccessKeyID != "K" || a.Scope.Region != "r" || !slices.Equal(a.SignedHeaders, []string{"host"}) || a.Signature != "ab" {
		t.Errorf("spaced header: got %+v", a)
	}
	for _, bad := range authorizationSeeds[4:] {
		if _, err := sigv4.ParseAuthorization(bad); !baton.IsCode(err, baton.ErrIncompleteSignature) {
			t.Errorf("ParseAuthorization(%q): %v, want IncompleteSignature", bad, err)
		}
	}
}

// FuzzVerify feeds Verify arbitrary Authorization headers, query strings,
// dates and bodies: it must not panic, and every refusal must be one of the
// authentication errors.
func FuzzVerify(f *testing.F) {
	f.Add(authorizationSeeds[0], "", "20260102T030405Z", "{}")
	f.Add("", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDALICE%2F20260102%2Fus-east-1%2Fsqs%2Faws4_request"+
		"&X-Amz-Date=20260102T030405Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=00", "", "")
	f.Add("", "X-Amz-Credential=AKIDALICE/2026&X-Amz-Expires=-1&X-Amz-Date=x", "", "")
	f.Add("AWS4-HMAC-SHA256 Credential=AKIDALICE/20260102/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=00",
		"Action=ListQueues&a=%zz&&=", "20260102T030405Z", "")
	v, err := sigv4.NewVerifier(clock.NewFake(now), []sigv4.Credential{alice})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, authorization, rawQuery, amzDate, body string) {
		r := &http.Request{Method: "POST", URL: &url.URL{Path: "/", RawQuery: rawQuery}, Host: "127.0.0.1:9324", Header: http.Header{}}
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		if amzDate != "" {
			r.Header.Set("X-Amz-Date", amzDate)
		}
		_, err := v.Verify(r, []byte(body))
		if err == nil {
			return
		}
		switch baton.AsError(err).Code {
		case baton.ErrMissingAuthenticationToken, baton.ErrIncompleteSignature, baton.ErrInvalidClientTokenID, baton.ErrSignatureDoesNotMatch:
		default:
			t.Fatalf("Verify: %v, want an authentication error", err)
		}
	})
}
