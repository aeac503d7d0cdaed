// Package batontest runs a Baton server inside a Go test, so that code using
// Amazon SQS through aws-sdk-go-v2 can be tested against a real server: the
// same engine, wire protocols and SigV4 checks as `baton serve`, on a free
// port of 127.0.0.1, with no process to start and nothing to clean up.
//
//	func TestWorker(t *testing.T) {
//		srv := batontest.New(t, batontest.WithFakeClock(time.Time{}))
//		jobs := srv.Queue(t, "jobs?VisibilityTimeout=30&dlq=jobs-dlq:3")
//		w := NewWorker(srv.Client(), jobs) // the code under test
//		...
//		srv.Clock().Advance(31 * time.Second) // the lease lapses, now
//	}
//
// New starts the server and stops it when the test ends; Start and Close
// do the same for code without a testing.TB. The server keeps its queues in
// memory unless WithEmbedded (the durable store, in a temporary directory) or
// WithStore says otherwise, accepts any request unless WithCredentials
// gives it keys, and reads the system clock unless WithFakeClock gives it
// one the test moves.
//
// Server.Client is an SQS client ready for the server: its endpoint, region
// and static credentials, and no retries, so that a test sees each error
// the server answers rather than the last of several. Server.Queue creates
// a queue from a one-line spec (attributes and a dead-letter queue
// included) and returns its URL.
//
// The server serves Amazon SNS on the same endpoint: Server.SNSClient is an
// SNS client for it, Server.Topic creates a topic from a spec of the same
// form and returns its ARN, and Server.Subscribe subscribes a queue to it:
//
//	orders := srv.Topic(t, "orders")
//	srv.Subscribe(t, orders, "billing?RawMessageDelivery=true")
//
// Baton sends no email or SMS and invokes no Lambda function or Firehose
// stream: Server.SNSDeliveries returns what AWS would have sent them (an
// SMS's text, an email's subject and body, the Lambda event), and
// Server.ClearSNSDeliveries forgets it.
//
// With WithFakeClock, time on the server passes only when the test moves
// Server.Clock: a visibility timeout lapses, a delayed message becomes
// visible and a long poll ends exactly when the clock passes them, and
// never by itself, so no test sleeps or depends on the machine's speed. A
// long poll (ReceiveMessage with WaitTimeSeconds) then returns when a
// message comes or the test advances the clock past its wait; Close answers
// any still waiting.
//
// The server's account is Account and its region Region; queue URLs are
// URL()/Account/name. Its behaviour is that of Baton, described in the
// repository's docs/sqs-behaviour.md.
//
// # Adding it to your module
//
// The module github.com/baton-sqs/baton is not published on a module proxy
// yet, so `go get` cannot fetch it. Until it is, clone the Baton repository
// beside your module and point your go.mod at the clone:
//
//	git clone <the Baton repository> ../baton
//	go mod edit -require=github.com/baton-sqs/baton@v0.0.0 -replace=github.com/baton-sqs/baton=../baton
//	go mod tidy
//
// The replace directive stays in your go.mod (and your CI needs the clone
// at the same place) until a published version replaces it. The module
// batontest/testdata/usemod is set up so, and TestOtherModule runs its
// tests.
package batontest
