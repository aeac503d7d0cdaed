// Package testutil starts in-process Baton servers on 127.0.0.1:0 for tests
// and offers helpers shared by the test suites.
package testutil

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// Epoch is the fake clock's starting time in tests.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Account is the account id of test servers.
const Account = "000000000000"

// Server is a running in-process server.
type Server struct {
	// URL is the base URL, http://127.0.0.1:<port>.
	URL    string
	Clock  *baton.FakeClock
	Engine *engine.Engine
	// Client is an aws-sdk-go-v2 SQS client pointed at the server.
	Client *sqs.Client
}

// Options change how StartServer builds the server.
type Options struct {
	// Store defaults to a new memstore.
	Store baton.Store
	// Credentials, if any, make the server require SigV4 signatures by one
	// of these keys, checked against the fake clock. Client then signs with
	// the first of them at the fake clock's time; ClientFor signs with any.
	Credentials []sigv4.Credential
	// MaxLongPollsPerClient is server.Config's bound on waiting long polls
	// per client address (0: the default, negative: none).
	MaxLongPollsPerClient int
	// Clock, if set, is the server's clock instead of a fake one, for tests
	// in which time must pass by itself (load tests whose leases lapse:
	// baton.SystemClock{}). Server.Clock is then nil.
	Clock baton.Clock
}

// StartServer starts a server on 127.0.0.1:0 with a fake clock set to Epoch
// (unless Options.Clock) and stops it when the test ends.
func StartServer(tb testing.TB, opts ...Options) *Server {
	tb.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Store == nil {
		o.Store = memstore.New()
	}
	var fake *baton.FakeClock
	clock := o.Clock
	if clock == nil {
		fake = baton.NewFakeClock(Epoch)
		clock = fake
	}
	eng, err := engine.New(engine.Config{Store: o.Store, Clock: clock})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	cfg := server.Config{Engine: eng, Account: Account, MaxLongPollsPerClient: o.MaxLongPollsPerClient}
	if len(o.Credentials) > 0 {
		if cfg.Verifier, err = sigv4.NewVerifier(clock, o.Credentials); err != nil {
			tb.Fatal(err)
		}
	}
	srv := &http.Server{Handler: server.New(cfg)}
	go srv.Serve(ln)
	tb.Cleanup(func() {
		eng.Close()
		srv.Close()
		o.Store.Close()
	})
	url := "http://" + ln.Addr().String()
	s := &Server{URL: url, Clock: fake, Engine: eng, Client: NewClient(url)}
	if len(o.Credentials) > 0 {
		s.Client = s.ClientFor(o.Credentials[0].AccessKeyID, o.Credentials[0].SecretAccessKey)
	}
	return s
}

// ClientFor returns an SQS client for the server that signs with the given
// key at the server clock's time, so that signatures stay within the
// server's 15-minute window however far a test moves a fake clock.
func (s *Server) ClientFor(accessKeyID, secret string) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(s.URL),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider(accessKeyID, secret, ""),
		RetryMaxAttempts: 1,
		HTTPSignerV4:     clockSigner{signer: v4.NewSigner(), clock: s.Engine.Clock()},
	})
}

// clockSigner is aws-sdk-go-v2's signer with the signing time taken from a
// baton.Clock instead of the wall clock.
type clockSigner struct {
	signer *v4.Signer
	clock  baton.Clock
}

// SignHTTP signs r at the clock's time; the SDK's own time is ignored.
func (c clockSigner) SignHTTP(ctx context.Context, creds aws.Credentials, r *http.Request, payloadHash, service, region string,
	_ time.Time, optFns ...func(*v4.SignerOptions)) error {
	return c.signer.SignHTTP(ctx, creds, r, payloadHash, service, region, c.clock.Now(), optFns...)
}

// NewClient returns an SQS client for endpoint with static test credentials.
func NewClient(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(endpoint),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		RetryMaxAttempts: 1,
	})
}

// MustCreateQueue creates a queue and returns its URL.
func (s *Server) MustCreateQueue(tb testing.TB, name string, attrs map[string]string) string {
	tb.Helper()
	out, err := s.Client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		tb.Fatalf("create queue %s: %v", name, err)
	}
	return *out.QueueUrl
}

// CheckFor polls cond until it returns nil or timeout passes, then fails
// the test with cond's last error (see poll.For).
func CheckFor(tb testing.TB, timeout time.Duration, cond func() error) {
	tb.Helper()
	poll.For(tb, timeout, cond)
}

// WaitForTimers waits until the fake clock has at least n pending timers,
// that is until that many long polls are waiting on it.
func (s *Server) WaitForTimers(tb testing.TB, n int) {
	tb.Helper()
	CheckFor(tb, 5*time.Second, func() error {
		if got := s.Clock.Timers(); got < n {
			return fmt.Errorf("pending timers: %d, want %d", got, n)
		}
		return nil
	})
}

// WaitForDeadline waits until the fake clock's earliest pending timer is due
// at t: a long poll has gone to sleep until then.
func (s *Server) WaitForDeadline(tb testing.TB, t time.Time) {
	tb.Helper()
	CheckFor(tb, 5*time.Second, func() error {
		if got, ok := s.Clock.NextDeadline(); !ok || !got.Equal(t) {
			return fmt.Errorf("next timer at %v (pending %v), want %v", got, ok, t)
		}
		return nil
	})
}
