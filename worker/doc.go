// Package worker is Lambda's SQS trigger without Lambda: it feeds a queue's
// messages, in batches, to an HTTP endpoint or to a local command, and
// deletes what the target handled. It is what `baton worker` runs.
//
// It is built on package consumer and, like it, talks to the queue only
// through the public SQS API (a consumer.Client), so it serves Amazon SQS
// as well as Baton.
//
// # Batches
//
// A mapping (Config) behaves as a Lambda event source mapping: BatchSize
// (1–10,000 on standard queues, at most 10 on FIFO queues),
// BatchingWindow (0–300 s; at least 1 s for batches over ten; none on FIFO
// queues), MaxPayload (6 MB by default) and MaxConcurrency. A batch is
// delivered when it is full, when its window (counted from its first
// message) has passed, or when the next message would take the event past
// MaxPayload. A message larger than MaxPayload on its own is delivered
// alone.
//
// The event is Lambda's: {"Records":[{"messageId", "receiptHandle",
// "body", "attributes", "messageAttributes" (stringValue, binaryValue,
// stringListValues, binaryListValues, dataType), "md5OfBody",
// "md5OfMessageAttributes" (when the message has attributes),
// "eventSource":"aws:sqs", "eventSourceARN", "awsRegion"}]}.
//
// # Results
//
// A successful delivery (an HTTP 2xx answer, or a command's exit status 0)
// deletes the whole batch; any other answer, a timeout or a failure to
// deliver leaves every message of it to come back after a backoff. With
// ReportBatchItemFailures the answer (the response body, or the command's
// standard output) decides, by Lambda's rules (see ParseBatchItemFailures):
// empty, null, {} or an empty or null batchItemFailures list mean full
// success; invalid JSON, a value that is not an object, an item without
// itemIdentifier (a wrong key name), a null, empty or non-string
// itemIdentifier, or one naming no message of the batch fail the whole
// batch; otherwise only the listed messages fail. On a FIFO queue the first
// failure fails every later message of the batch too, so that no group is
// processed out of order.
//
// # Leases
//
// Lambda never renews a lease, so a batch waiting in its window, a
// throttled retry or a slow function can outlive it. This worker keeps
// every lease of a batch renewed from receipt to result, in the window,
// while the batch waits for a free invocation, while the target works and
// while a throttled target is waited for. Every such wait is bounded: the
// window, TargetTimeout per delivery, the queue's visibility timeout for
// throttling (as Lambda retries throttled invocations until the lease would
// end), the target's wait for messages that arrive while it pauses the
// receives (within the 12-hour ceiling of a lease), and for commands
// StallTimeout and KillGrace. Failed messages are
// released with a backoff instead of waiting out their lease. On a queue
// with a RedrivePolicy it grows from a base chosen so that the delays
// before the dead-letter queue would add up to maxReceiveCount-1 leases,
// what Lambda's retries take, each kept within what is left of the
// message's lease (consumer.RetryPolicy.WithinLease): the first retries
// come sooner than Lambda's, none later, and a target failing for a few
// seconds does not spend every receive. Without one it is the consumer's
// default (ConsumerOptions may set another).
//
// # Targets
//
// HTTPTarget POSTs the event as JSON, or, with PerMessage, one message per
// request like Elastic Beanstalk's sqsd (the body as is, with
// X-Aws-Sqsd-Msgid, X-Aws-Sqsd-Receive-Count, X-Aws-Sqsd-First-Received-At,
// X-Aws-Sqsd-Sent-At, X-Aws-Sqsd-Queue, X-Aws-Sqsd-Sender-Id and
// X-Aws-Sqsd-Attr-NAME headers). A 429 or 503 answer is throttling: the
// worker waits as the Retry-After header says (seconds or an HTTP date; an
// exponential backoff without it), keeping the leases, and tries again;
// its receives pause until the wait ends. If the wait would pass the
// queue's visibility timeout it releases the batch at once, with a delay
// within what is left of its leases (a server reads a release; a delay
// past the lease's end reads as a renewal and a lapse), and the receives
// stay paused for the rest of the wait. Messages that arrive while the
// receives are paused (in receives already in flight when the pause
// began) are held, their leases kept, and sent when it ends, so that a
// throttle spends no receive of a message the target was not sent.
// Redirects are not followed (a
// followed 301, 302 or 303 would turn the POST into a GET without the
// event): a 3xx answer fails the batch. A Host header in HTTPTarget.Header
// sets the request's Host; the headers the worker sets itself
// (Content-Type, User-Agent, Content-Length, Transfer-Encoding) are
// refused.
//
// CommandTarget runs a command with /bin/sh -c in its own process group:
// the event on standard input, the answer on standard output, exit status 0
// for success. Every line the command writes to file descriptor 3 (named
// in BATON_PROGRESS_FD) is progress: with StallTimeout set, a command
// silent on it that long is stalled. A stalled command, or one past
// TargetTimeout, gets SIGTERM on its whole process group, then SIGKILL
// after KillGrace, and its batch is retried. When a command exits, whatever
// it left running in its process group gets SIGKILL: commands must not
// leave work in the background or daemonize. When the worker is PID 1 (in
// a container without an init) or a subreaper, it reaps the processes of a
// command's group that become its children on Linux; orphans from outside
// the group need an init (docker run --init, or tini).
//
// # Shutdown
//
// Shutdown delivers the batches still gathering at once, lets running
// deliveries finish until the drain ends, then cancels the rest (stopping
// commands as above), waits for the receives in flight, releases every
// lease it holds so that the messages are visible again at once, and
// flushes pending deletes: consumer's phased shutdown. It logs what it
// waits for when it begins, and what it delivered when it ends. The drain ends early enough to leave the time to stop a
// command (twice KillGrace plus 1 s) and to release the leases (a third of
// the shutdown, at most 5 s); if the deadline comes sooner, commands being
// stopped get SIGKILL before their grace ends, so that their leases can
// still be released. No command outlives Run or Shutdown: any still
// running gets SIGKILL before they return. A shutdown whose releases or
// deletes failed, that ended with a handler still running, or whose
// deadline came before its releases, deletes and outcomes under way had
// ended, logs its stop line as an error, and Run returns
// ErrUnfinishedShutdown; one that had to cancel receives in flight logs it
// as a warning.
package worker
