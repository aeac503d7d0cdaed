package server_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/baton-sqs/baton/internal/testutil"
)

// TestSNSMobileAndSMSActions: the read-only mobile push and SMS actions
// answer, through the SDK, as AWS answers an account with no platform
// applications, phone numbers or SMS settings, out of the SMS sandbox.
func TestSNSMobileAndSMSActions(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()

	apps, err := c.ListPlatformApplications(ctx, &awssns.ListPlatformApplicationsInput{})
	if err != nil || len(apps.PlatformApplications) != 0 || apps.NextToken != nil {
		t.Errorf("ListPlatformApplications = %+v, %v; want none", apps, err)
	}
	_, err = c.ListEndpointsByPlatformApplication(ctx, &awssns.ListEndpointsByPlatformApplicationInput{
		PlatformApplicationArn: aws.String("arn:aws:sns:us-east-1:" + testutil.Account + ":app/GCM/app")})
	wantSNSError(t, err, "NotFound", 404, "PlatformApplication does not exist")

	sandbox, err := c.GetSMSSandboxAccountStatus(ctx, &awssns.GetSMSSandboxAccountStatusInput{})
	if err != nil || sandbox.IsInSandbox {
		t.Errorf("GetSMSSandboxAccountStatus = %+v, %v; want IsInSandbox false", sandbox, err)
	}
	sbNumbers, err := c.ListSMSSandboxPhoneNumbers(ctx, &awssns.ListSMSSandboxPhoneNumbersInput{})
	if err != nil || len(sbNumbers.PhoneNumbers) != 0 {
		t.Errorf("ListSMSSandboxPhoneNumbers = %+v, %v; want none", sbNumbers, err)
	}
	origin, err := c.ListOriginationNumbers(ctx, &awssns.ListOriginationNumbersInput{})
	if err != nil || len(origin.PhoneNumbers) != 0 {
		t.Errorf("ListOriginationNumbers = %+v, %v; want none", origin, err)
	}
	opted, err := c.CheckIfPhoneNumberIsOptedOut(ctx, &awssns.CheckIfPhoneNumberIsOptedOutInput{PhoneNumber: aws.String("+15555550100")})
	if err != nil || opted.IsOptedOut {
		t.Errorf("CheckIfPhoneNumberIsOptedOut = %+v, %v; want false", opted, err)
	}
	out, err := c.ListPhoneNumbersOptedOut(ctx, &awssns.ListPhoneNumbersOptedOutInput{})
	if err != nil || len(out.PhoneNumbers) != 0 || out.NextToken != nil {
		t.Errorf("ListPhoneNumbersOptedOut = %+v, %v; want none", out, err)
	}
	attrs, err := c.GetSMSAttributes(ctx, &awssns.GetSMSAttributesInput{Attributes: []string{"DefaultSMSType"}})
	if err != nil || len(attrs.Attributes) != 0 {
		t.Errorf("GetSMSAttributes = %+v, %v; want none", attrs, err)
	}
}
