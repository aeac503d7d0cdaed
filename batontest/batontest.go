package batontest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/logfilter"
	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pebblestore"
)

const (
	// Account is the account id in the server's queue URLs and ARNs, and
	// the account of the keys given by WithCredentials.
	Account = "000000000000"
	// Region is the region in the server's ARNs and the clients' region.
	Region = "us-east-1"
)

// Epoch is where WithFakeClock(time.Time{}) starts the clock.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Anonymous keys sign the requests of Client when the server takes no
// credentials; such a server accepts any signature, or none.
const (
	anonymousKeyID  = "AKIDBATONTEST"
	anonymousSecret = "batontest"
)

// shutdownGrace bounds how long Close waits for requests in progress once
// the waiting long polls have been answered.
const shutdownGrace = 10 * time.Second

// An Option changes how New and Start build the server.
type Option func(*config)

type config struct {
	store     baton.Store
	embedded  bool
	fake      *clock.Fake
	creds     []sigv4.Credential
	longPolls int
	policies  sns.QueuePolicyMode
}

// WithEmbedded makes the server keep its queues in the embedded durable
// store that baton serve uses by default (package store/pebblestore), in a
// new temporary directory removed by Close, instead of in memory. The store
// commits with relaxed durability (no fsync per commit): a test's data need
// not outlive the machine.
func WithEmbedded() Option { return func(c *config) { c.embedded = true } }

// WithSQLite is WithEmbedded, under the name the embedded store had when it
// kept its data in SQLite.
//
// Deprecated: use WithEmbedded.
func WithSQLite() Option { return WithEmbedded() }

// WithStore makes the server keep its queues in s, which Close closes (as
// does Start if it fails).
func WithStore(s baton.Store) Option { return func(c *config) { c.store = s } }

// WithFakeClock gives the server a clock that moves only when the test
// moves it (Server.Clock), starting at start, or at Epoch if start is zero.
// Visibility timeouts, delays, retention and long polls then wait on it:
// a lease lapses when the test advances the clock past it, at once, and a
// ReceiveMessage with WaitTimeSeconds waits until the clock passes its wait
// or a message comes. Without it the server reads the system clock.
func WithFakeClock(start time.Time) Option {
	if start.IsZero() {
		start = Epoch
	}
	return func(c *config) { c.fake = clock.NewFake(start) }
}

// WithCredentials makes the server require every SQS request to be signed
// (AWS Signature Version 4) by a key it knows, and adds one: accessKeyID
// with secretAccessKey, acting for Account. Client signs with the first key
// given. Repeat the option for more keys.
func WithCredentials(accessKeyID, secretAccessKey string) Option {
	return WithAccountCredentials(Account, accessKeyID, secretAccessKey)
}

// WithAccountCredentials is WithCredentials with a key acting for another
// 12-digit account, which sees only its own queues.
func WithAccountCredentials(account, accessKeyID, secretAccessKey string) Option {
	return func(c *config) {
		c.creds = append(c.creds, sigv4.Credential{AccessKeyID: accessKeyID, SecretAccessKey: secretAccessKey, Account: account})
	}
}

// WithMaxLongPollsPerClient bounds the ReceiveMessage calls one client
// address may have waiting at once (see server.Config); more are refused
// with RequestThrottled. A negative n means no bound. Every client of a
// test server has the address 127.0.0.1.
func WithMaxLongPollsPerClient(n int) Option { return func(c *config) { c.longPolls = n } }

// WithSNSQueuePolicies sets what SNS does with a subscribed queue whose
// Policy does not let the topic send, as baton serve's
// --sns-queue-policies does: sns.QueuePoliciesWarn (the default) delivers
// and notes that AWS would not, sns.QueuePoliciesEnforce refuses the copy
// as AWS does, sns.QueuePoliciesOff delivers without a word.
func WithSNSQueuePolicies(m sns.QueuePolicyMode) Option { return func(c *config) { c.policies = m } }

// Server is a Baton server running in the test's process, listening on a
// free port of 127.0.0.1. Its methods are safe for concurrent use.
type Server struct {
	url    string
	clock  clock.Clock
	fake   *clock.Fake
	engine *engine.Engine
	client *sqs.Client
	// api is the handler http serves; Close closes it after http.
	api   *server.Server
	http  *http.Server
	store baton.Store
	// sns serves SNS; Close stops its HTTP/S deliveries before the store.
	sns *sns.Service
	// dir is WithEmbedded's directory, removed by Close.
	dir string

	closeOnce sync.Once
	closeErr  error
}

// New starts a server for the test and stops it, with Close, when the test
// and its subtests have finished (tb.Cleanup). It fails the test if the
// server cannot start.
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := Start(opts...)
	if err != nil {
		tb.Fatalf("batontest: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("batontest: %v", err)
		}
	})
	return s
}

// Start starts a server that runs until Close: New for code that has no
// testing.TB, such as an example or a TestMain.
func Start(opts ...Option) (*Server, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	s := &Server{clock: clock.System{}, fake: c.fake, store: c.store}
	if c.fake != nil {
		s.clock = c.fake
	}
	if err := s.start(c); err != nil {
		s.release()
		return nil, err
	}
	return s, nil
}

// start opens the store and starts the engine and the HTTP server; on an
// error the caller releases what was opened.
func (s *Server) start(c config) error {
	var err error
	switch {
	case c.embedded && c.store != nil:
		return errors.New("WithEmbedded and WithStore exclude each other")
	case c.embedded:
		if s.dir, err = os.MkdirTemp("", "batontest-"); err != nil {
			return err
		}
		if s.store, err = pebblestore.Open(context.Background(), s.dir, pebblestore.Options{Durability: pebblestore.DurabilityRelaxed,
			// What a test's output must show: the store's warnings (a disk
			// filling up), not each open's INFO line.
			Logger: slog.New(logfilter.AtLeast(slog.Default().Handler(), slog.LevelWarn))}); err != nil {
			return err
		}
	case c.store == nil:
		s.store = memstore.New()
	}
	if s.engine, err = engine.New(engine.Config{Store: s.store, Clock: s.clock, Region: Region}); err != nil {
		return err
	}
	s.sns = sns.ForStore(s.engine, s.store, nil)
	if s.sns != nil {
		s.sns.SetQueuePolicyMode(c.policies)
	}
	// /healthz asks the store, as baton serve's does: a store that
	// refuses work (a failed disk, a database down) is not "ok".
	cfg := server.Config{Engine: s.engine, Account: Account, MaxLongPollsPerClient: c.longPolls, SNS: s.sns,
		Ready: s.engine.StoreReady()}
	if len(c.creds) > 0 {
		// The verifier reads the server's clock, so that the clients' own
		// signatures, made at that clock's time, stay within its window
		// however far a test moves a fake clock.
		if cfg.Verifier, err = sigv4.NewVerifier(s.clock, c.creds); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.url = "http://" + ln.Addr().String()
	s.api = server.New(cfg)
	s.http = &http.Server{Handler: s.api, ReadHeaderTimeout: 10 * time.Second}
	go s.http.Serve(ln)
	if len(c.creds) > 0 {
		s.client = s.ClientFor(c.creds[0].AccessKeyID, c.creds[0].SecretAccessKey)
	} else {
		s.client = s.ClientFor(anonymousKeyID, anonymousSecret)
	}
	return nil
}

// Close stops the server: it answers the waiting long polls (with no
// messages), stops accepting requests, waits for those in progress and
// closes the store, removing WithEmbedded's directory. A request still in
// progress 10 s later (a client sending its body that slowly) has its
// connection closed, and Close returns an error saying so, which New's
// cleanup reports as a test failure. Later calls do nothing and return the
// first call's error.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.engine.Close()
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			s.http.Close()
			s.closeErr = fmt.Errorf("stopping the server: %w", err)
		}
		s.api.Close()
		if err := s.release(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}

// release closes the engine, if started, and the store, and removes the
// store's directory, if any.
func (s *Server) release() error {
	var err error
	if s.engine != nil {
		s.engine.Close()
	}
	if s.sns != nil {
		s.sns.Close()
	}
	if s.store != nil {
		err = s.store.Close()
	}
	if s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}

// URL returns the server's endpoint, http://127.0.0.1:<port>: what an
// SDK's endpoint setting (BaseEndpoint in aws-sdk-go-v2) takes.
func (s *Server) URL() string { return s.url }

// Client returns an SQS client of aws-sdk-go-v2 for the server: its
// endpoint, Region, static credentials (WithCredentials' first key, if
// any) and no retries, so that a test sees every error the server answers.
// It signs requests at the server clock's time (see ClientFor). Its HTTP
// client hands Go's transport a copy of each request body, so that the SDK's
// early close of its own cannot cut an answer off on a busy machine.
func (s *Server) Client() *sqs.Client { return s.client }

// ClientFor returns a client like Client that signs with the given key,
// which need not be one the server knows: a test of a refused signature
// uses it. It signs at the server clock's time, so that its signatures
// stay within the 15 minutes of clock skew the server allows however far a
// test moves a fake clock.
func (s *Server) ClientFor(accessKeyID, secretAccessKey string) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(s.url),
		Region:           Region,
		Credentials:      credentials.NewStaticCredentialsProvider(accessKeyID, secretAccessKey, ""),
		RetryMaxAttempts: 1,
		HTTPSignerV4:     clockSigner{signer: v4.NewSigner(), clock: s.clock},
		HTTPClient:       sdkhttp.Client(nil),
	})
}

// Clock returns the fake clock of WithFakeClock, which the test moves with
// Advance or Set, or nil if the server reads the system clock.
func (s *Server) Clock() *clock.Fake { return s.fake }

// DataDir returns WithEmbedded's directory, which holds the store's log while
// the server runs, or "" if the server has no such directory.
func (s *Server) DataDir() string { return s.dir }

// Engine returns the server's engine, for tests that act on queues below
// the SQS API.
func (s *Server) Engine() *engine.Engine { return s.engine }

// WaitForTimers waits, up to 10 s of real time, until the fake clock has
// at least n pending timers, that is until that many long polls (or
// delayed wake-ups) are waiting on it, and fails the test if they are not.
// A test that starts a ReceiveMessage with WaitTimeSeconds in a goroutine
// calls it before advancing the clock, so the poll waits from the time the
// test expects.
func (s *Server) WaitForTimers(tb testing.TB, n int) {
	tb.Helper()
	if s.fake == nil {
		tb.Fatal("batontest: WaitForTimers needs WithFakeClock")
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.fake.Timers() < n {
		if time.Now().After(deadline) {
			tb.Fatalf("batontest: %d timers pending on the fake clock after 10s, want %d", s.fake.Timers(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// clockSigner is aws-sdk-go-v2's SigV4 signer with the signing time taken
// from a clock.Clock instead of the wall clock.
type clockSigner struct {
	signer *v4.Signer
	clock  clock.Clock
}

// SignHTTP signs r at the clock's time; the time the SDK passes is ignored.
func (c clockSigner) SignHTTP(ctx context.Context, creds aws.Credentials, r *http.Request, payloadHash, service, region string,
	_ time.Time, optFns ...func(*v4.SignerOptions)) error {
	return c.signer.SignHTTP(ctx, creds, r, payloadHash, service, region, c.clock.Now(), optFns...)
}
