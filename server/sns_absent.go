package server

import (
	"context"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/protocol/snswire"
)

// snsAbsentFeatures are the read-only mobile push and SMS actions,
// answered as AWS answers an account without platform applications,
// phone numbers or SMS settings, out of the SMS sandbox: Baton keeps none
// (docs/sns.md).
func snsAbsentFeatures() []protocol.Operation {
	return []protocol.Operation{
		protocol.Op("ListPlatformApplications", func(context.Context, *snswire.ListPlatformApplicationsInput) (*snswire.ListPlatformApplicationsOutput, error) {
			return &snswire.ListPlatformApplicationsOutput{}, nil
		}),
		protocol.Op("ListEndpointsByPlatformApplication", func(_ context.Context, in *snswire.ListEndpointsByPlatformApplicationInput) (*protocol.NoOutput, error) {
			if in.PlatformApplicationArn == "" {
				return nil, baton.Errorf(baton.ErrSNSInvalidParameter, "Invalid parameter: PlatformApplicationArn Reason: no value for required parameter")
			}
			return nil, baton.Errorf(baton.ErrSNSNotFound, "PlatformApplication does not exist")
		}),
		protocol.Op("GetSMSSandboxAccountStatus", func(context.Context, *snswire.GetSMSSandboxAccountStatusInput) (*snswire.GetSMSSandboxAccountStatusOutput, error) {
			// Out of the sandbox: a publish to any phone number is taken
			// (and recorded, sns/record_payload.go).
			return &snswire.GetSMSSandboxAccountStatusOutput{IsInSandbox: false}, nil
		}),
		protocol.Op("ListSMSSandboxPhoneNumbers", func(context.Context, *snswire.ListPhoneNumbersInput) (*snswire.ListPhoneNumbersOutput, error) {
			return &snswire.ListPhoneNumbersOutput{}, nil
		}),
		protocol.Op("ListOriginationNumbers", func(context.Context, *snswire.ListPhoneNumbersInput) (*snswire.ListPhoneNumbersOutput, error) {
			return &snswire.ListPhoneNumbersOutput{}, nil
		}),
		protocol.Op("CheckIfPhoneNumberIsOptedOut", func(_ context.Context, in *snswire.CheckIfPhoneNumberIsOptedOutInput) (*snswire.CheckIfPhoneNumberIsOptedOutOutput, error) {
			if in.PhoneNumber == "" {
				return nil, baton.Errorf(baton.ErrSNSInvalidParameter, "Invalid parameter: PhoneNumber Reason: no value for required parameter")
			}
			return &snswire.CheckIfPhoneNumberIsOptedOutOutput{}, nil
		}),
		protocol.Op("ListPhoneNumbersOptedOut", func(context.Context, *snswire.ListPhoneNumbersOptedOutInput) (*snswire.ListPhoneNumbersOptedOutOutput, error) {
			return &snswire.ListPhoneNumbersOptedOutOutput{}, nil
		}),
		protocol.Op("GetSMSAttributes", func(context.Context, *snswire.GetSMSAttributesInput) (*snswire.GetSMSAttributesOutput, error) {
			return &snswire.GetSMSAttributesOutput{}, nil
		}),
	}
}
