package server_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

// TestSNSMobileAndSMSWrites: through the SDK, the mobile push and SMS
// actions that would create or change what Baton keeps none of answer as
// AWS answers an account without them: a missing application or endpoint
// is NotFound (404), a missing sandbox number ResourceNotFound (404),
// deleting what does not exist succeeds, opting in a number that is not
// opted out succeeds, and what Baton cannot do (reach a push platform,
// send an SMS, keep a data protection policy) is InvalidParameter saying
// so.
func TestSNSMobileAndSMSWrites(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	app := aws.String("arn:aws:sns:us-east-1:" + testutil.Account + ":app/GCM/app")
	endpoint := aws.String("arn:aws:sns:us-east-1:" + testutil.Account + ":endpoint/GCM/app/5e3e9847-3183-3f18-a7e8-671c3a57d4b3")
	attrs := map[string]string{"PlatformCredential": "key"}

	_, err := c.CreatePlatformApplication(ctx, &awssns.CreatePlatformApplicationInput{Name: aws.String("app"), Platform: aws.String("GCM"), Attributes: attrs})
	wantSNSError(t, err, "InvalidParameter", 400,
		"Invalid parameter: Platform Reason: Baton delivers no mobile push notifications and keeps no platform applications")
	_, err = c.CreatePlatformEndpoint(ctx, &awssns.CreatePlatformEndpointInput{PlatformApplicationArn: app, Token: aws.String("t")})
	wantSNSError(t, err, "NotFound", 404, "PlatformApplication does not exist")
	_, err = c.GetPlatformApplicationAttributes(ctx, &awssns.GetPlatformApplicationAttributesInput{PlatformApplicationArn: app})
	wantSNSError(t, err, "NotFound", 404, "PlatformApplication does not exist")
	_, err = c.SetPlatformApplicationAttributes(ctx, &awssns.SetPlatformApplicationAttributesInput{PlatformApplicationArn: app, Attributes: attrs})
	wantSNSError(t, err, "NotFound", 404, "PlatformApplication does not exist")
	if _, err := c.DeletePlatformApplication(ctx, &awssns.DeletePlatformApplicationInput{PlatformApplicationArn: app}); err != nil {
		t.Errorf("DeletePlatformApplication of none: %v", err)
	}
	_, err = c.GetEndpointAttributes(ctx, &awssns.GetEndpointAttributesInput{EndpointArn: endpoint})
	wantSNSError(t, err, "NotFound", 404, "Endpoint does not exist")
	_, err = c.SetEndpointAttributes(ctx, &awssns.SetEndpointAttributesInput{EndpointArn: endpoint, Attributes: map[string]string{"Enabled": "true"}})
	wantSNSError(t, err, "NotFound", 404, "Endpoint does not exist")
	if _, err := c.DeleteEndpoint(ctx, &awssns.DeleteEndpointInput{EndpointArn: endpoint}); err != nil {
		t.Errorf("DeleteEndpoint of none (idempotent on AWS): %v", err)
	}

	_, err = c.SetSMSAttributes(ctx, &awssns.SetSMSAttributesInput{Attributes: map[string]string{"DefaultSMSType": "Transactional"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: attributes Reason: Baton sends no SMS and keeps no SMS settings")
	if _, err := c.OptInPhoneNumber(ctx, &awssns.OptInPhoneNumberInput{PhoneNumber: aws.String("+15555550100")}); err != nil {
		t.Errorf("OptInPhoneNumber: %v", err)
	}
	_, err = c.CreateSMSSandboxPhoneNumber(ctx, &awssns.CreateSMSSandboxPhoneNumberInput{PhoneNumber: aws.String("+15555550100"),
		LanguageCode: snstypes.LanguageCodeStringEnUs})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: PhoneNumber Reason: Baton's account is not in the SMS sandbox: a publish to any phone number is taken and recorded")
	_, err = c.VerifySMSSandboxPhoneNumber(ctx, &awssns.VerifySMSSandboxPhoneNumberInput{PhoneNumber: aws.String("+15555550100"), OneTimePassword: aws.String("123456")})
	wantSNSError(t, err, "ResourceNotFound", 404, "Resource does not exist")
	_, err = c.DeleteSMSSandboxPhoneNumber(ctx, &awssns.DeleteSMSSandboxPhoneNumberInput{PhoneNumber: aws.String("+15555550100")})
	wantSNSError(t, err, "ResourceNotFound", 404, "Resource does not exist")

	topic := mustCreateTopic(t, c, "guarded")
	got, err := c.GetDataProtectionPolicy(ctx, &awssns.GetDataProtectionPolicyInput{ResourceArn: aws.String(topic)})
	if err != nil || aws.ToString(got.DataProtectionPolicy) != "" {
		t.Errorf("GetDataProtectionPolicy = %+v, %v; want none", got, err)
	}
	_, err = c.PutDataProtectionPolicy(ctx, &awssns.PutDataProtectionPolicyInput{ResourceArn: aws.String(topic), DataProtectionPolicy: aws.String(`{"Name":"p"}`)})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: DataProtectionPolicy Reason: Baton does not serve this yet")
	_, err = c.GetDataProtectionPolicy(ctx, &awssns.GetDataProtectionPolicyInput{ResourceArn: aws.String(topicARN("absent"))})
	wantSNSError(t, err, "NotFound", 404, "Topic does not exist")
}

// TestSNSMobileAndSMSWritesRequired: a required parameter left out (the
// SDKs check them before sending, so the request is made by hand) is
// InvalidParameter naming it.
func TestSNSMobileAndSMSWritesRequired(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	for _, tc := range []struct {
		action string
		params url.Values
		name   string
	}{
		{"CreatePlatformApplication", url.Values{"Name": {"a"}, "Platform": {"GCM"}}, "Attributes"},
		{"CreatePlatformEndpoint", url.Values{"PlatformApplicationArn": {"arn:aws:sns:us-east-1:1:app/GCM/a"}}, "Token"},
		{"GetPlatformApplicationAttributes", nil, "PlatformApplicationArn"},
		{"SetPlatformApplicationAttributes", url.Values{"PlatformApplicationArn": {"x"}}, "Attributes"},
		{"DeletePlatformApplication", nil, "PlatformApplicationArn"},
		{"GetEndpointAttributes", nil, "EndpointArn"},
		{"SetEndpointAttributes", url.Values{"EndpointArn": {"x"}}, "Attributes"},
		{"DeleteEndpoint", nil, "EndpointArn"},
		{"SetSMSAttributes", nil, "attributes"},
		{"OptInPhoneNumber", nil, "phoneNumber"},
		{"CreateSMSSandboxPhoneNumber", nil, "PhoneNumber"},
		{"VerifySMSSandboxPhoneNumber", url.Values{"PhoneNumber": {"+15555550100"}}, "OneTimePassword"},
		{"DeleteSMSSandboxPhoneNumber", nil, "PhoneNumber"},
		{"PutDataProtectionPolicy", url.Values{"ResourceArn": {topicARN("t")}}, "DataProtectionPolicy"},
		{"GetDataProtectionPolicy", nil, "ResourceArn"},
	} {
		q := url.Values{"Action": {tc.action}, "Version": {"2010-03-31"}}
		for k, v := range tc.params {
			q[k] = v
		}
		resp, err := http.PostForm(srv.URL+"/", q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := "<Code>InvalidParameter</Code><Message>Invalid parameter: " + tc.name + " Reason: no value for required parameter</Message>"
		if resp.StatusCode != 400 || !strings.Contains(string(b), want) {
			t.Errorf("%s without %s: %d %s, want 400 %s", tc.action, tc.name, resp.StatusCode, b, want)
		}
	}
}
