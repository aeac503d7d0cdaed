package sns

import (
	"errors"
	"fmt"

	"github.com/baton-sqs/baton"
)

// invalidParameter is SNS's usual refusal: "Invalid parameter: <what>".
func invalidParameter(format string, args ...any) *baton.Error {
	return baton.Errorf(baton.ErrSNSInvalidParameter, "Invalid parameter: "+format, args...)
}

// missing is the refusal of an absent required parameter: SNS has no
// MissingParameter code.
func missing(name string) *baton.Error {
	return invalidParameter("%s Reason: no value for required parameter", name)
}

// notBuilt refuses a part of SNS that Baton does not serve yet, saying so,
// rather than pretend to serve it.
func notBuilt(format string, args ...any) *baton.Error {
	return invalidParameter(format+" Reason: Baton does not serve this yet", args...)
}

func errTopicNotFound() *baton.Error {
	return baton.Errorf(baton.ErrSNSNotFound, "Topic does not exist")
}

func errSubscriptionNotFound() *baton.Error {
	return baton.Errorf(baton.ErrSNSNotFound, "Subscription does not exist")
}

// storeErr wraps a store failure for the log; the client sees
// InternalError, or ServiceUnavailable for baton.ErrUnavailable.
func storeErr(err error, what string) error {
	var e *baton.Error
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("sns: %s: %w", what, err)
}
