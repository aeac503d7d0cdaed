package server

import (
	"context"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/protocol/snswire"
	"github.com/baton-sqs/baton/sns"
)

// The mobile push, SMS and data protection actions that would create or
// change what Baton does not keep (docs/sns.md, "Mobile push and SMS").
// Each checks its required parameters as AWS does, then answers as AWS
// answers an account that has no platform applications, endpoints or
// sandbox numbers: a missing application or endpoint is NotFound, a
// missing sandbox number ResourceNotFound (the errors AWS's model gives
// these actions), a deletion of what does not exist succeeds (DeleteEndpoint
// is documented idempotent). What Baton would have to do and cannot (reach
// a push platform, send an SMS) is refused with InvalidParameter saying so.
// AWS's texts for these answers are not known.

const (
	noPush = "Reason: Baton delivers no mobile push notifications and keeps no platform applications"
	noSMS  = "Reason: Baton sends no SMS and keeps no SMS settings"
	// noSandbox: the account is out of the SMS sandbox
	// (GetSMSSandboxAccountStatus), so every number is published to.
	noSandbox = "Reason: Baton's account is not in the SMS sandbox: a publish to any phone number is taken and recorded"
)

// snsRequired refuses a required parameter left out, as SNS does.
func snsRequired(params ...[2]string) error {
	for _, p := range params {
		if p[1] == "" {
			return baton.Errorf(baton.ErrSNSInvalidParameter, "Invalid parameter: %s Reason: no value for required parameter", p[0])
		}
	}
	return nil
}

func errNoApplication() error {
	return baton.Errorf(baton.ErrSNSNotFound, "PlatformApplication does not exist")
}

func errNoEndpoint() error { return baton.Errorf(baton.ErrSNSNotFound, "Endpoint does not exist") }

func errNoSandboxNumber() error {
	return baton.Errorf(baton.ErrSNSResourceNotFound, "Resource does not exist")
}

// attrsGiven is "" for no attributes, so that a required map counts as
// missing when empty.
func attrsGiven(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	return "given"
}

// snsAbsentWrites are the write actions of mobile push and SMS, and the
// data protection actions.
func (s *Server) snsAbsentWrites(svc *sns.Service) []protocol.Operation {
	return append(s.snsDataProtection(svc),
		protocol.Op("CreatePlatformApplication", func(_ context.Context, in *snswire.CreatePlatformApplicationInput) (*protocol.NoOutput, error) {
			if err := snsRequired([2]string{"Name", in.Name}, [2]string{"Platform", in.Platform},
				[2]string{"Attributes", attrsGiven(in.Attributes)}); err != nil {
				return nil, err
			}
			return nil, baton.Errorf(baton.ErrSNSInvalidParameter, "Invalid parameter: Platform "+noPush)
		}),
		protocol.Op("CreatePlatformEndpoint", func(_ context.Context, in *snswire.CreatePlatformEndpointInput) (*protocol.NoOutput, error) {
			if err := snsRequired([2]string{"PlatformApplicationArn", in.PlatformApplicationArn}, [2]string{"Token", in.Token}); err != nil {
				return nil, err
			}
			return nil, errNoApplication()
		}),
		protocol.Op("GetPlatformApplicationAttributes", func(_ context.Context, in *snswire.PlatformApplicationInput) (*protocol.NoOutput, error) {
			if err := snsRequired([2]string{"PlatformApplicationArn", in.PlatformApplicationArn}); err != nil {
				return nil, err
			}
			return nil, errNoApplication()
		}),
		protocol.Op("SetPlatformApplicationAttributes", func(_ context.Context, in *snswire.PlatformApplicationInput) (*protocol.NoOutput, error) {
			if err := snsRequired([2]string{"PlatformApplicationArn", in.PlatformApplicationArn},
				[2]string{"Attributes", attrsGiven(in.Attributes)}); err != nil {
				return nil, err
			}
			return nil, errNoApplication()
		}),
		protocol.Op("DeletePlatformApplication", func(_ context.Context, in *snswire.PlatformApplicationInput) (*protocol.NoOutput, error) {
			return nil, snsRequired([2]string{"PlatformApplicationArn", in.PlatformApplicationArn})
		}),
		protocol.Op("GetEndpointAttributes", func(_ context.Context, in *snswire.EndpointInput) (*protocol.NoOutput, error) {
			if err := snsRequired([2]string{"EndpointArn", in.EndpointArn}); err != nil {
				return nil, err
			}
			return nil, errNoEndpoint()
		}),
		protocol.Op("SetEndpointAttributes", func(_ context.Context, in *snswire.EndpointInput) (*protocol.NoOutput, error) {
			if err := snsRequired([2]string{"EndpointArn", in.EndpointArn}, [2]string{"Attributes", attrsGiven(in.Attributes)}); err != nil {
				return nil, err
			}
			return nil, errNoEndpoint()
		}),
		protocol.Op("DeleteEndpoint", func(_ context.Context, in *snswire.EndpointInput) (*protocol.NoOutput, error) {
			return nil, snsRequired([2]string{"EndpointArn", in.EndpointArn})
		}),
		protocol.Op("SetSMSAttributes", func(_ context.Context, in *snswire.SetSMSAttributesInput) (*protocol.NoOutput, error) {
			if err := snsRequired([2]string{"attributes", attrsGiven(in.Attributes)}); err != nil {
				return nil, err
			}
			return nil, baton.Errorf(baton.ErrSNSInvalidParameter, "Invalid parameter: attributes "+noSMS)
		}),
		protocol.Op("OptInPhoneNumber", func(_ context.Context, in *snswire.OptInPhoneNumberInput) (*snswire.OptInPhoneNumberOutput, error) {
			// No number is opted out (ListPhoneNumbersOptedOut): every
			// one is opted in already.
			if err := snsRequired([2]string{"phoneNumber", in.PhoneNumber}); err != nil {
				return nil, err
			}
			return &snswire.OptInPhoneNumberOutput{}, nil
		}),
		protocol.Op("CreateSMSSandboxPhoneNumber", func(_ context.Context, in *snswire.SandboxPhoneNumberInput) (*protocol.NoOutput, error) {
			if err := snsRequired([2]string{"PhoneNumber", in.PhoneNumber}); err != nil {
				return nil, err
			}
			return nil, baton.Errorf(baton.ErrSNSInvalidParameter, "Invalid parameter: PhoneNumber "+noSandbox)
		}),
		protocol.Op("VerifySMSSandboxPhoneNumber", func(_ context.Context, in *snswire.SandboxPhoneNumberInput) (*protocol.NoOutput, error) {
			if err := snsRequired([2]string{"PhoneNumber", in.PhoneNumber}, [2]string{"OneTimePassword", in.OneTimePassword}); err != nil {
				return nil, err
			}
			return nil, errNoSandboxNumber()
		}),
		protocol.Op("DeleteSMSSandboxPhoneNumber", func(_ context.Context, in *snswire.SandboxPhoneNumberInput) (*protocol.NoOutput, error) {
			if err := snsRequired([2]string{"PhoneNumber", in.PhoneNumber}); err != nil {
				return nil, err
			}
			return nil, errNoSandboxNumber()
		}),
	)
}

// snsDataProtection are Get/PutDataProtectionPolicy (sns/dataprotection.go).
func (s *Server) snsDataProtection(svc *sns.Service) []protocol.Operation {
	return []protocol.Operation{
		protocol.Op("GetDataProtectionPolicy", func(ctx context.Context, in *snswire.GetDataProtectionPolicyInput) (*snswire.GetDataProtectionPolicyOutput, error) {
			p, err := svc.GetDataProtectionPolicy(ctx, s.caller(ctx), in.ResourceArn)
			if err != nil {
				return nil, err
			}
			return &snswire.GetDataProtectionPolicyOutput{DataProtectionPolicy: p}, nil
		}),
		protocol.Op("PutDataProtectionPolicy", func(ctx context.Context, in *snswire.PutDataProtectionPolicyInput) (*protocol.NoOutput, error) {
			return nil, svc.PutDataProtectionPolicy(ctx, s.caller(ctx), in.ResourceArn, in.DataProtectionPolicy)
		}),
	}
}
