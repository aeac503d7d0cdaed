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
