package baton

import "net/http"

// The error codes of the SNS API (docs/architecture.md §8). SNS speaks only
// the Query protocol, so what matters of each is its Query code and status;
// the SDKs choose their exception type from the code, so these are spelled
// exactly as AWS's SNS model spells them.
const (
	// ErrSNSInvalidParameter is nearly every SNS validation error:
	// "Invalid parameter: <name>[ Reason: <why>]".
	ErrSNSInvalidParameter ErrorCode = "SNS.InvalidParameter"
	// ErrSNSParameterValueInvalid is a message attribute SNS refuses.
	ErrSNSParameterValueInvalid ErrorCode = "SNS.ParameterValueInvalid"
	// ErrSNSValidation is a message attribute without a DataType.
	ErrSNSValidation ErrorCode = "SNS.ValidationError"
	// ErrSNSNotFound is a topic or subscription that does not exist.
	ErrSNSNotFound ErrorCode = "SNS.NotFound"
	// ErrSNSResourceNotFound is a tagging call naming a missing topic.
	ErrSNSResourceNotFound ErrorCode = "SNS.ResourceNotFound"
	// ErrSNSTagLimitExceeded is a topic given more than 50 tags.
	ErrSNSTagLimitExceeded ErrorCode = "SNS.TagLimitExceeded"
	// ErrSNSAuthorization is a caller denied an action, such as an
	// unsigned unsubscribe of a subscription that requires a signature.
	ErrSNSAuthorization ErrorCode = "SNS.AuthorizationError"
	// ErrSNSFilterPolicyLimitExceeded is a filter policy past a topic's or
	// an account's quota.
	ErrSNSFilterPolicyLimitExceeded ErrorCode = "SNS.FilterPolicyLimitExceeded"
	// ErrSNSSubscriptionLimitExceeded is a subscription past a topic's
	// quota.
	ErrSNSSubscriptionLimitExceeded ErrorCode = "SNS.SubscriptionLimitExceeded"
	// The PublishBatch refusals of a whole request.
	ErrSNSEmptyBatchRequest            ErrorCode = "SNS.EmptyBatchRequest"
	ErrSNSTooManyEntriesInBatchRequest ErrorCode = "SNS.TooManyEntriesInBatchRequest"
	ErrSNSBatchEntryIdsNotDistinct     ErrorCode = "SNS.BatchEntryIdsNotDistinct"
	ErrSNSInvalidBatchEntryID          ErrorCode = "SNS.InvalidBatchEntryId"
	ErrSNSBatchRequestTooLong          ErrorCode = "SNS.BatchRequestTooLong"
)

const nsSNS = "com.amazonaws.sns"

// snsErrors are SNS's rows of errorTable (AWS's SNS API reference, the
// Errors of each action, and the model's error traits).
var snsErrors = map[ErrorCode]ErrorSpec{
	ErrSNSInvalidParameter:      {nsSNS, "InvalidParameter", http.StatusBadRequest, false, ""},
	ErrSNSParameterValueInvalid: {nsSNS, "ParameterValueInvalid", http.StatusBadRequest, false, ""},
	ErrSNSValidation:            {nsSNS, "ValidationError", http.StatusBadRequest, false, ""},
	ErrSNSNotFound:              {nsSNS, "NotFound", http.StatusNotFound, false, ""},
	ErrSNSResourceNotFound:      {nsSNS, "ResourceNotFound", http.StatusNotFound, false, ""},
	ErrSNSTagLimitExceeded:      {nsSNS, "TagLimitExceeded", http.StatusBadRequest, false, ""},
	ErrSNSAuthorization:         {nsSNS, "AuthorizationError", http.StatusForbidden, false, ""},

	ErrSNSFilterPolicyLimitExceeded: {nsSNS, "FilterPolicyLimitExceeded", http.StatusForbidden, false, ""},
	ErrSNSSubscriptionLimitExceeded: {nsSNS, "SubscriptionLimitExceeded", http.StatusForbidden, false, ""},

	ErrSNSEmptyBatchRequest:            {nsSNS, "EmptyBatchRequest", http.StatusBadRequest, false, ""},
	ErrSNSTooManyEntriesInBatchRequest: {nsSNS, "TooManyEntriesInBatchRequest", http.StatusBadRequest, false, ""},
	ErrSNSBatchEntryIdsNotDistinct:     {nsSNS, "BatchEntryIdsNotDistinct", http.StatusBadRequest, false, ""},
	ErrSNSInvalidBatchEntryID:          {nsSNS, "InvalidBatchEntryId", http.StatusBadRequest, false, ""},
	ErrSNSBatchRequestTooLong:          {nsSNS, "BatchRequestTooLong", http.StatusBadRequest, false, ""},
}

func init() {
	for code, spec := range snsErrors {
		errorTable[code] = spec
	}
}
