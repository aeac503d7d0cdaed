package baton

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrorCode names one SQS error as Baton reports it. The set is closed: every
// code has one row in errorTable giving its JSON shape, Query code and status.
type ErrorCode string

// The error codes a client may see. The string is the shape name AWS's JSON
// protocol uses after the '#' of __type.
const (
	ErrQueueDoesNotExist            ErrorCode = "QueueDoesNotExist"
	ErrQueueNameExists              ErrorCode = "QueueNameExists"
	ErrQueueDeletedRecently         ErrorCode = "QueueDeletedRecently"
	ErrPurgeQueueInProgress         ErrorCode = "PurgeQueueInProgress"
	ErrReceiptHandleIsInvalid       ErrorCode = "ReceiptHandleIsInvalid"
	ErrInvalidMessageContents       ErrorCode = "InvalidMessageContents"
	ErrTooManyEntriesInBatchRequest ErrorCode = "TooManyEntriesInBatchRequest"
	ErrEmptyBatchRequest            ErrorCode = "EmptyBatchRequest"
	ErrBatchEntryIdsNotDistinct     ErrorCode = "BatchEntryIdsNotDistinct"
	ErrBatchRequestTooLong          ErrorCode = "BatchRequestTooLong"
	ErrInvalidBatchEntryID          ErrorCode = "InvalidBatchEntryId"
	ErrInvalidAttributeName         ErrorCode = "InvalidAttributeName"
	ErrInvalidAttributeValue        ErrorCode = "InvalidAttributeValue"
	ErrUnsupportedOperation         ErrorCode = "UnsupportedOperation"
	ErrOverLimit                    ErrorCode = "OverLimit"
	ErrRequestThrottled             ErrorCode = "RequestThrottled"
	ErrInvalidAddress               ErrorCode = "InvalidAddress"
	ErrInvalidSecurity              ErrorCode = "InvalidSecurity"
	ErrResourceNotFound             ErrorCode = "ResourceNotFoundException"
	ErrInvalidParameterValue        ErrorCode = "InvalidParameterValueException"
	ErrMissingParameter             ErrorCode = "MissingRequiredParameterException"
	ErrAccessDenied                 ErrorCode = "AccessDeniedException"
	ErrInvalidClientTokenID         ErrorCode = "InvalidClientTokenId"
	ErrSignatureDoesNotMatch        ErrorCode = "SignatureDoesNotMatch"
	ErrMissingAuthenticationToken   ErrorCode = "MissingAuthenticationToken"
	ErrIncompleteSignature          ErrorCode = "IncompleteSignature"
	ErrInvalidAction                ErrorCode = "InvalidAction"
	ErrUnknownOperation             ErrorCode = "UnknownOperationException"
	ErrSerialization                ErrorCode = "SerializationException"
	ErrInternal                     ErrorCode = "InternalError"
	// ErrServiceUnavailable is a server fault the client should retry:
	// the store is unavailable for now (ErrUnavailable).
	ErrServiceUnavailable ErrorCode = "ServiceUnavailable"

	// ErrRequestEntityTooLarge is a request body over the size the server
	// reads: AWS answers such a request HTTP 413 before any SQS parsing.
	ErrRequestEntityTooLarge ErrorCode = "RequestEntityTooLarge"
)

// ErrorSpec is how one code appears on the wire.
type ErrorSpec struct {
	// Namespace prefixes the JSON __type: modeled SQS errors use
	// "com.amazonaws.sqs", AWS's common errors "com.amazon.coral.service".
	Namespace string
	// QueryCode is the code in Query error XML and in the
	// x-amzn-query-error header, which SDKs report as the error code.
	QueryCode string
	// Status is the HTTP status.
	Status int
	// Receiver marks server faults; all others are the sender's.
	Receiver bool
	// QueryMessage, if set, replaces the message in Query responses, where
	// AWS words a few errors differently.
	QueryMessage string
}

const (
	nsSQS    = "com.amazonaws.sqs"
	nsCommon = "com.amazon.coral.service"
)

// errorTable is the one source of truth for code, status and Query code
// (docs/sqs-behaviour.md §7). IncompleteSignature (a malformed SigV4 Authorization
// header or presigned query) is 400 as in AWS's common-error table, unlike
// the other authentication errors (403).
var errorTable = map[ErrorCode]ErrorSpec{
	ErrQueueDoesNotExist: {nsSQS, "AWS.SimpleQueueService.NonExistentQueue", http.StatusBadRequest, false,
		"The specified queue does not exist for this wsdl version."},
	ErrQueueNameExists:              {nsSQS, "QueueAlreadyExists", http.StatusBadRequest, false, ""},
	ErrQueueDeletedRecently:         {nsSQS, "AWS.SimpleQueueService.QueueDeletedRecently", http.StatusBadRequest, false, ""},
	ErrPurgeQueueInProgress:         {nsSQS, "AWS.SimpleQueueService.PurgeQueueInProgress", http.StatusForbidden, false, ""},
	ErrReceiptHandleIsInvalid:       {nsSQS, "ReceiptHandleIsInvalid", http.StatusNotFound, false, ""},
	ErrInvalidMessageContents:       {nsSQS, "InvalidMessageContents", http.StatusBadRequest, false, ""},
	ErrTooManyEntriesInBatchRequest: {nsSQS, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", http.StatusBadRequest, false, ""},
	ErrEmptyBatchRequest:            {nsSQS, "AWS.SimpleQueueService.EmptyBatchRequest", http.StatusBadRequest, false, ""},
	ErrBatchEntryIdsNotDistinct:     {nsSQS, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", http.StatusBadRequest, false, ""},
	ErrBatchRequestTooLong:          {nsSQS, "AWS.SimpleQueueService.BatchRequestTooLong", http.StatusBadRequest, false, ""},
	ErrInvalidBatchEntryID:          {nsSQS, "AWS.SimpleQueueService.InvalidBatchEntryId", http.StatusBadRequest, false, ""},
	ErrInvalidAttributeName:         {nsSQS, "InvalidAttributeName", http.StatusBadRequest, false, ""},
	ErrInvalidAttributeValue:        {nsSQS, "InvalidAttributeValue", http.StatusBadRequest, false, ""},
	ErrUnsupportedOperation:         {nsSQS, "AWS.SimpleQueueService.UnsupportedOperation", http.StatusBadRequest, false, ""},
	ErrOverLimit:                    {nsSQS, "OverLimit", http.StatusForbidden, false, ""},
	ErrRequestThrottled:             {nsSQS, "RequestThrottled", http.StatusForbidden, false, ""},
	ErrInvalidAddress:               {nsSQS, "InvalidAddress", http.StatusNotFound, false, ""},
	ErrInvalidSecurity:              {nsSQS, "InvalidSecurity", http.StatusForbidden, false, ""},
	ErrResourceNotFound:             {nsSQS, "ResourceNotFoundException", http.StatusNotFound, false, ""},
	ErrInvalidParameterValue:        {nsCommon, "InvalidParameterValue", http.StatusBadRequest, false, ""},
	ErrMissingParameter:             {nsCommon, "MissingParameter", http.StatusBadRequest, false, ""},
	ErrAccessDenied:                 {nsCommon, "AccessDenied", http.StatusForbidden, false, ""},
	ErrInvalidClientTokenID:         {nsCommon, "InvalidClientTokenId", http.StatusForbidden, false, ""},
	ErrSignatureDoesNotMatch:        {nsCommon, "SignatureDoesNotMatch", http.StatusForbidden, false, ""},
	ErrMissingAuthenticationToken:   {nsCommon, "MissingAuthenticationToken", http.StatusForbidden, false, ""},
	ErrIncompleteSignature:          {nsCommon, "IncompleteSignature", http.StatusBadRequest, false, ""},
	ErrInvalidAction:                {nsCommon, "InvalidAction", http.StatusBadRequest, false, ""},
	ErrUnknownOperation:             {nsCommon, "UnknownOperationException", http.StatusBadRequest, false, ""},
	ErrSerialization:                {nsCommon, "SerializationException", http.StatusBadRequest, false, ""},
	ErrInternal:                     {nsCommon, "InternalError", http.StatusInternalServerError, true, ""},
	ErrServiceUnavailable:           {nsCommon, "ServiceUnavailable", http.StatusServiceUnavailable, true, ""},
	ErrRequestEntityTooLarge:        {nsCommon, "RequestEntityTooLarge", http.StatusRequestEntityTooLarge, false, ""},
}

// Spec returns how the code appears on the wire. Unknown codes are reported
// as InternalError.
func (c ErrorCode) Spec() ErrorSpec {
	if s, ok := errorTable[c]; ok {
		return s
	}
	return errorTable[ErrInternal]
}

// Error is the one error type a client may see. Anything else that reaches
// the wire is reported as InternalError with its details only logged.
type Error struct {
	Code    ErrorCode
	Message string
}

// Errorf returns an *Error with a formatted message.
func Errorf(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// AsError returns the *Error inside err, a ServiceUnavailable when err is
// the store's ErrUnavailable, or an InternalError when err is some other
// failure, so callers can always render a client-facing error.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, ErrUnavailable) {
		return &Error{Code: ErrServiceUnavailable, Message: "The service is unavailable. Please try again shortly."}
	}
	return &Error{Code: ErrInternal, Message: "We encountered an internal error. Please try again."}
}

// IsCode reports whether err is an *Error with the given code.
func IsCode(err error, code ErrorCode) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// MissingParameter is the error for an absent required parameter.
func MissingParameter(name string) *Error {
	return Errorf(ErrMissingParameter, "The request must contain the parameter %s.", name)
}

// InvalidParameter is the error for a parameter value that breaks a rule.
func InvalidParameter(name, value, reason string) *Error {
	return Errorf(ErrInvalidParameterValue, "Value %s for parameter %s is invalid. Reason: %s", value, name, reason)
}
