package snswire

// The mobile push and SMS actions Baton answers as AWS answers an account
// that has no platform applications, numbers or SMS settings. Members in
// lower case are so in SNS's model.

type ListPlatformApplicationsInput struct{ NextToken string }

// PlatformApplicationList is ListPlatformApplications's
// <PlatformApplications>, always empty in Baton.
type PlatformApplicationList struct {
	Member []struct{ PlatformApplicationArn string } `query:"member"`
}

type ListPlatformApplicationsOutput struct {
	PlatformApplications PlatformApplicationList
	NextToken            string
}

type ListEndpointsByPlatformApplicationInput struct {
	PlatformApplicationArn string
	NextToken              string
}

type GetSMSSandboxAccountStatusInput struct{}

type GetSMSSandboxAccountStatusOutput struct{ IsInSandbox bool }

type ListPhoneNumbersInput struct {
	NextToken  string
	MaxResults string
}

// PhoneNumberList is the <PhoneNumbers> of ListSMSSandboxPhoneNumbers
// and ListOriginationNumbers, always empty in Baton.
type PhoneNumberList struct {
	Member []struct{ PhoneNumber string } `query:"member"`
}

type ListPhoneNumbersOutput struct {
	PhoneNumbers PhoneNumberList
	NextToken    string
}

type CheckIfPhoneNumberIsOptedOutInput struct {
	PhoneNumber string `query:"phoneNumber"`
}

type CheckIfPhoneNumberIsOptedOutOutput struct {
	IsOptedOut bool `query:"isOptedOut"`
}

type ListPhoneNumbersOptedOutInput struct {
	NextToken string `query:"nextToken"`
}

// OptedOutList is ListPhoneNumbersOptedOut's <phoneNumbers>.
type OptedOutList struct {
	Member []string `query:"member"`
}

type ListPhoneNumbersOptedOutOutput struct {
	PhoneNumbers OptedOutList `query:"phoneNumbers"`
}

type GetSMSAttributesInput struct {
	Attributes []string `query:"attributes.member"`
}

type GetSMSAttributesOutput struct {
	Attributes AttributeMap `query:"attributes"`
}

// The mobile push and SMS actions that would create or change what Baton
// does not keep (server/sns_absent_write.go).

type CreatePlatformApplicationInput struct {
	Name       string
	Platform   string
	Attributes map[string]string `query:"Attributes.entry,key,value"`
}

type CreatePlatformEndpointInput struct {
	PlatformApplicationArn string
	Token                  string
	CustomUserData         string
	Attributes             map[string]string `query:"Attributes.entry,key,value"`
}

// PlatformApplicationInput is the input of the actions naming one
// platform application.
type PlatformApplicationInput struct {
	PlatformApplicationArn string
	Attributes             map[string]string `query:"Attributes.entry,key,value"`
}

// EndpointInput is the input of the actions naming one platform endpoint.
type EndpointInput struct {
	EndpointArn string
	Attributes  map[string]string `query:"Attributes.entry,key,value"`
}

type SetSMSAttributesInput struct {
	Attributes map[string]string `query:"attributes.entry,key,value"`
}

type OptInPhoneNumberInput struct {
	PhoneNumber string `query:"phoneNumber"`
}

// OptInPhoneNumberOutput is empty: AWS answers <OptInPhoneNumberResult/>.
type OptInPhoneNumberOutput struct{}

// SandboxPhoneNumberInput is the input of the SMS sandbox actions that
// name a number.
type SandboxPhoneNumberInput struct {
	PhoneNumber     string
	LanguageCode    string
	OneTimePassword string
}

type PutDataProtectionPolicyInput struct {
	ResourceArn          string
	DataProtectionPolicy string
}

type GetDataProtectionPolicyInput struct{ ResourceArn string }

type GetDataProtectionPolicyOutput struct{ DataProtectionPolicy string }
