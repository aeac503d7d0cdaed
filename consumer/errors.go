package consumer

import (
	"errors"
	"strings"
)

// Causes the runtime cancels a handler's context with. Read them with
// context.Cause(ctx); errors.Is works on the result.
var (
	// ErrLeaseLost: the lease ended before the handler did (its deadline
	// passed without a confirmed renewal, or SQS said the receipt is no
	// longer valid). Another consumer may already hold the message; work
	// done from now on may be duplicated, so fence downstream writes with
	// Lease.Epoch.
	ErrLeaseLost = errors.New("consumer: lease lost")
	// ErrStalled: the handler showed no progress (Delivery.Progress) within
	// the stall timeout after the auto-renew budget ran out.
	ErrStalled = errors.New("consumer: handler stalled without progress")
	// ErrAttemptTimeout: the attempt ran past its time limit, or so close to
	// the 12-hour lease ceiling that the lease could not be kept.
	ErrAttemptTimeout = errors.New("consumer: attempt timed out")
	// ErrShutdown: the consumer is shutting down and the drain period ended.
	ErrShutdown = errors.New("consumer: shutting down")
)

// Errors returned by the runtime's methods.
var (
	// ErrClosed is returned by Run on a consumer that was already run or
	// shut down.
	ErrClosed = errors.New("consumer: closed")
	// ErrLeaseEnded is returned by Lease.Extend and Lease.Release once the
	// lease has ended (deleted, released or lost).
	ErrLeaseEnded = errors.New("consumer: lease already ended")
	// ErrInvalidExtension is returned by Lease.Extend for a duration that is
	// not positive.
	ErrInvalidExtension = errors.New("consumer: lease extension must be positive")
)

// apiError is what aws-sdk-go-v2 errors from the service look like
// (smithy.APIError), matched by behaviour so this package needs no smithy
// import.
type apiError interface {
	error
	ErrorCode() string
	ErrorMessage() string
}

// failure says what an error from a lease operation means for the lease.
type failure int

const (
	// transient: throttled, a server fault or no answer: try again while the
	// lease lasts.
	transient failure = iota
	// gone: the receipt no longer names a lease (deleted, expired, never
	// valid): the lease is lost.
	gone
	// ceiling: the extension would pass the 12-hour limit.
	ceiling
	// fatal: a request the service will never accept (a bug or a missing
	// queue); retrying will not help.
	fatal
)

// classify reads an error code and message from SQS (a whole-call error or a
// batch entry's failure).
func classify(code, msg string, senderFault bool) failure {
	m := strings.ToLower(msg)
	switch code {
	case "ReceiptHandleIsInvalid", "InvalidIdFormat", "MessageNotInflight",
		"AWS.SimpleQueueService.MessageNotInflight":
		return gone
	case "InvalidParameterValue", "InvalidParameterValueException":
		switch {
		case strings.Contains(m, "beyond the limit"):
			return ceiling
		case strings.Contains(m, "does not exist"), strings.Contains(m, "has expired"),
			strings.Contains(m, "not available for visibility timeout change"),
			strings.Contains(m, "receipthandle is invalid"), strings.Contains(m, "receipt handle"):
			return gone
		}
		return fatal
	case "RequestThrottled", "ThrottlingException", "Throttling", "KMS.ThrottlingException",
		"InternalError", "InternalFailure", "ServiceUnavailable", "RequestTimeout":
		return transient
	case "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "AccessDenied",
		"AccessDeniedException", "InvalidAddress", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
		"AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.InvalidBatchEntryId",
		"MissingParameter":
		return fatal
	}
	if senderFault {
		return fatal
	}
	return transient
}

// classifyErr reads a whole-call error. Errors that are not SQS answers
// (network failures, timeouts, cancellations) are transient.
func classifyErr(err error) failure {
	var ae apiError
	if errors.As(err, &ae) {
		return classify(ae.ErrorCode(), ae.ErrorMessage(), false)
	}
	return transient
}

// entryError is one failed entry of a batch action.
type entryError struct {
	Code, Message string
	SenderFault   bool
}

// Error describes the entry's failure.
func (e *entryError) Error() string {
	return "consumer: " + e.Code + ": " + e.Message
}

// ErrorCode returns the SQS error code, as smithy.APIError does.
func (e *entryError) ErrorCode() string { return e.Code }

// ErrorMessage returns the SQS error message.
func (e *entryError) ErrorMessage() string { return e.Message }

// classifyAny reads an error from a whole call or from a batch entry.
func classifyAny(err error) failure {
	var ee *entryError
	if errors.As(err, &ee) {
		return classify(ee.Code, ee.Message, ee.SenderFault)
	}
	return classifyErr(err)
}
