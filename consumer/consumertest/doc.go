// Package consumertest helps test code built on package consumer without a
// server and without sleeping: Clock is a fake clock.Clock that moves only
// when told to, and SQS is an in-memory fake of the SQS actions the runtime
// uses (standard and FIFO queues, leases, receive counts, long polls on the
// fake clock) with fault injection: throttling, lost requests, lost
// responses, slow calls and per-entry batch failures.
//
// The fake follows SQS where the runtime depends on it: any receipt ever
// issued for a standard-queue message still changes or deletes it (stale
// handles), a visibility change on a lapsed lease answers success and
// changes nothing, a FIFO group is blocked from its first in-flight message
// on, a FIFO delete with a stale receipt fails with "The receipt handle
// has expired" while a FIFO visibility change with one answers success and
// changes nothing, and a receive moves a message already received
// maxReceiveCount times to the dead-letter queue its RedrivePolicy names.
// FIFO sends deduplicate for 5 minutes by MessageDeduplicationId, or by
// body with ContentBasedDeduplication, and a duplicate answers the first
// send's MessageId.
// A table of cases (conformance_test.go) runs against the fake and against
// a Baton server, so the two cannot drift apart.
package consumertest
