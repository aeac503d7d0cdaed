// Package consumer is a runtime for consuming an SQS queue (Baton's or
// Amazon's) that gets the message lease right by default.
//
// It talks to the queue only through Client, the handful of aws-sdk-go-v2
// SQS methods it uses, so an *sqs.Client works as is.
//
// # Leases
//
// Every delivery carries a Lease owned by exactly one attempt. Its deadline
// is counted on the runtime's Clock from the moment the ReceiveMessage
// request was sent, and so is the 12-hour ceiling SQS enforces. One
// scheduler per consumer renews only the leases near expiry, in
// ChangeMessageVisibilityBatch calls of up to ten, and reads every entry's
// result. A renewal extends by the lease length until 100 handlers have
// succeeded, then by their 99th-percentile duration plus a quarter,
// between the lease length and ten minutes (LeaseExtension, HandlerP99). A lease is renewed only while its handler shows life: inside the
// auto-renew budget (WithAutoRenew, default 5 minutes) or within the stall
// timeout of its last Delivery.Progress. An attempt with no progress is
// cancelled with ErrStalled; one that runs too long (WithAttemptTimeout, or
// the ceiling) with ErrAttemptTimeout. It gets a grace period to return,
// then its lease is released with backoff and, if the goroutine never
// returns, its slot is reported stuck. When a lease is lost (its deadline
// passed without a confirmed renewal, or SQS says the receipt is gone) the
// handler's context is cancelled with ErrLeaseLost and Lease.Lost closes;
// Lease.Epoch fences downstream writes. Extend, release and delete go
// through the lease strictly in order, so a heartbeat never overwrites a
// backoff and nothing extends a lease after it ended.
//
// # Outcomes
//
// A handler returns nil (delete), an error (retry after the RetryPolicy's
// delay: exponential, jittered, never zero by default), Retry(after),
// NotReady(after) (snooze without spending the message's attempts: on a
// standard queue the message is re-sent with DelaySeconds and an attempt
// counter attribute), Permanent(err) (send to the dead-letter queue now,
// then delete) or Drop(reason) (delete without the work).
// Delivery.AttemptsLeft and IsFinalAttempt come from the queue's
// RedrivePolicy, read at start.
//
// # Concurrency
//
// Concurrency is a number of slots (WithConcurrency). Receivers fetch only
// for free slots, so no message waits in a buffer while its lease runs, and
// a slow message never holds back the next poll. On FIFO queues a slot takes
// one group's messages from a receive and runs them in order, each once the
// previous one's delete is confirmed; a failure (a failed delete included)
// gives back the rest of that group's messages. With a redrive policy they
// are hidden for the wait time, and until the failed message succeeds
// receives fetch one message at a time, so that its retries do not spend
// the receives (the redrive budget) of the messages behind it. A
// BatchHandler (NewBatch)
// gets up to ten messages and returns one result per message.
//
// # Shutdown
//
// Shutdown stops receiving, drains, cancels what is left with ErrShutdown,
// waits for the receives in flight, then releases every held lease and
// flushes every pending delete, all under the caller's one deadline, and
// returns an exact Report. A stop costs a message at most the receive it
// was held under: a message released while receives are still long-polling
// would be taken by them, each time a receive of its RedrivePolicy's
// maxReceiveCount, so the releases wait (the leases kept alive) until the
// receives have ended (a long poll lasts at most WithWaitTime). A receive
// is not abandoned unless the deadline leaves no other choice: SQS may
// still lease messages to a long poll whose caller has gone, and they would
// stay hidden a whole visibility timeout; after such a cancel the releases
// keep their messages hidden until the poll's wait would have ended. So
// leave the shutdown deadline room for the wait time.
//
// # Around the handler
//
// Idempotency is middleware that skips work already done (an
// IdempotencyStore: MemoryStore or SQLStore, for SQLite and PostgreSQL); its
// in-progress record expires with the lease and is renewed with it. An
// Observer sees every event; Metrics is an Observer serving Prometheus
// metrics. Doctor checks the settings against each other and against the
// queue's attributes; Run does so at start.
//
// # Logging
//
// The runtime is not silent by default: with no observer it logs through
// log/slog (slog.Default(), or the logger given with WithLogger, which also
// logs alongside an observer) what an operator must know: lost leases,
// late deletes, stalled, overrun and stuck handlers, failed calls (failed
// receives once when they start failing and once when they succeed again,
// not one line each), snoozes on a message's last receive, handlers whose
// p99 outgrows their lease, Doctor's warnings at start, and the shutdown
// summary (also returned by Run and Shutdown, and kept in Consumer.Report).
//
// Package consumertest has a fake clock and an in-memory SQS with fault
// injection for testing handlers and the runtime without a server.
package consumer
