package sigv4_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// signedFor builds a JSON request signed with c's key for region and
// service at at.
func signedFor(tb testing.TB, c sigv4.Credential, region, service string, at time.Time) *http.Request {
	tb.Helper()
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:9324/", strings.NewReader(jsonBody))
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range jsonHeaders {
		r.Header.Set(k, v)
	}
	creds := aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hashOf([]byte(jsonBody)), service, region, at); err != nil {
		tb.Fatal(err)
	}
	return r
}

// TestVerifyReusesSigningKeysSafely checks that the signing keys a
// Verifier keeps between requests never let a request through that
// deriving them afresh would refuse: another key's request on the same
// scope, a wrong secret after the right one, another day, region or
// service, and more scopes than it keeps.
func TestVerifyReusesSigningKeysSafely(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(now)
	v, err := sigv4.NewVerifier(clk, []sigv4.Credential{alice, bob})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(r *http.Request) (string, error) {
		cred, err := v.Verify(r, []byte(jsonBody))
		return cred.Account, err
	}
	wantAccount := func(what string, r *http.Request, account string) {
		t.Helper()
		if got, err := verify(r); err != nil || got != account {
			t.Errorf("%s: account %q, error %v; want %s", what, got, err, account)
		}
	}
	wantMismatch := func(what string, r *http.Request) {
		t.Helper()
		if _, err := verify(r); baton.AsError(err).Code != baton.ErrSignatureDoesNotMatch {
			t.Errorf("%s: error %v, want SignatureDoesNotMatch", what, err)
		}
	}
	forged := sigv4.Credential{AccessKeyID: alice.AccessKeyID, SecretAccessKey: "not-alices"}
	for range 2 { // the second time round, every key is a kept one
		wantAccount("alice", signedFor(t, alice, "eu-west-1", "sqs", clk.Now()), alice.Account)
		wantAccount("bob on alice's scope", signedFor(t, bob, "eu-west-1", "sqs", clk.Now()), bob.Account)
		wantMismatch("a wrong secret on a kept scope", signedFor(t, forged, "eu-west-1", "sqs", clk.Now()))
		wantMismatch("a wrong secret on a new scope", signedFor(t, forged, "eu-north-1", "sqs", clk.Now()))
		wantAccount("alice for sns", signedFor(t, alice, "eu-west-1", "sns", clk.Now()), alice.Account)
		wantAccount("alice after the wrong secret", signedFor(t, alice, "eu-north-1", "sqs", clk.Now()), alice.Account)
	}
	clk.Advance(24 * time.Hour)
	wantAccount("alice the next day", signedFor(t, alice, "eu-west-1", "sqs", clk.Now()), alice.Account)
	wantMismatch("yesterday's signature", signedFor(t, alice, "eu-west-1", "sqs", clk.Now().Add(-24*time.Hour)))
	for i := range 300 {
		wantAccount("alice in a region of many", signedFor(t, alice, "region-"+strconv.Itoa(i), "sqs", clk.Now()), alice.Account)
	}
	wantMismatch("a wrong secret after many regions", signedFor(t, forged, "region-299", "sqs", clk.Now()))
	wantAccount("bob after many regions", signedFor(t, bob, "region-299", "sqs", clk.Now()), bob.Account)
}

// BenchmarkVerify is the check of one header-signed request of ten 1 KiB
// messages, as the server makes it before each SendMessageBatch.
func BenchmarkVerify(b *testing.B) {
	body := []byte(`{"QueueUrl":"http://127.0.0.1:9324/111111111111/bench","Entries":[` +
		strings.Repeat(`{"Id":"0","MessageBody":"`+strings.Repeat("0123456789abcdef", 64)+`"},`, 9) +
		`{"Id":"9","MessageBody":"x"}]}`)
	v, err := sigv4.NewVerifier(clock.NewFake(now), []sigv4.Credential{alice})
	if err != nil {
		b.Fatal(err)
	}
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:9324/", nil)
	if err != nil {
		b.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	r.Header.Set("X-Amz-Target", "AmazonSQS.SendMessageBatch")
	creds := aws.Credentials{AccessKeyID: alice.AccessKeyID, SecretAccessKey: alice.SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hashOf(body), "sqs", "eu-west-1", now); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	start := bench.ProcessCPU()
	for b.Loop() {
		if _, err := v.Verify(r, body); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time varies less than wall time on a shared machine.
	b.ReportMetric(float64(bench.ProcessCPU()-start)/float64(b.N), "cpu-ns/op")
}
