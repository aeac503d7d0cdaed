// Package testutil starts in-process Baton servers on 127.0.0.1:0 for tests,
// with package batontest, and offers helpers shared by the test suites.
package testutil

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/sns"
)

// Epoch is the fake clock's starting time in tests.
var Epoch = batontest.Epoch

// Account is the account id of test servers.
const Account = batontest.Account

// Server is a running in-process server: a batontest.Server with its parts
// as fields, as the project's tests have long used them.
type Server struct {
	// URL is the base URL, http://127.0.0.1:<port>.
	URL    string
	Clock  *clock.Fake
	Engine *engine.Engine
	// Client is an aws-sdk-go-v2 SQS client pointed at the server.
	Client *sqs.Client

	bt *batontest.Server
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
	// Clock, if set, is clock.System{} instead of a fake clock, for
	// tests in which time must pass by itself (load tests whose leases
	// lapse). Server.Clock is then nil.
	Clock clock.Clock
	// SNSQueuePolicies is batontest.WithSNSQueuePolicies' mode (the zero
	// value is the default, sns.QueuePoliciesWarn).
	SNSQueuePolicies sns.QueuePolicyMode
}

// StartServer starts a server with batontest on 127.0.0.1:0 with a fake
// clock set to Epoch (unless Options.Clock) and stops it when the test
// ends.
func StartServer(tb testing.TB, opts ...Options) *Server {
	tb.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	var bo []batontest.Option
	switch o.Clock.(type) {
	case nil:
		bo = append(bo, batontest.WithFakeClock(Epoch))
	case clock.System:
	default:
		tb.Fatalf("testutil: Options.Clock %T: only clock.System{} is supported", o.Clock)
	}
	if o.Store != nil {
		bo = append(bo, batontest.WithStore(o.Store))
	}
	for _, c := range o.Credentials {
		bo = append(bo, batontest.WithAccountCredentials(c.Account, c.AccessKeyID, c.SecretAccessKey))
	}
	if o.MaxLongPollsPerClient != 0 {
		bo = append(bo, batontest.WithMaxLongPollsPerClient(o.MaxLongPollsPerClient))
	}
	bo = append(bo, batontest.WithSNSQueuePolicies(o.SNSQueuePolicies))
	bt := batontest.New(tb, bo...)
	return &Server{URL: bt.URL(), Clock: bt.Clock(), Engine: bt.Engine(), Client: bt.Client(), bt: bt}
}

// ClientFor returns an SQS client for the server that signs with the given
// key at the server clock's time (batontest.Server.ClientFor).
func (s *Server) ClientFor(accessKeyID, secret string) *sqs.Client {
	return s.bt.ClientFor(accessKeyID, secret)
}

// NewClient returns an SQS client for endpoint with static test credentials.
func NewClient(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(endpoint),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkhttp.Client(nil),
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
