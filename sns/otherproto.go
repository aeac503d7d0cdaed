package sns

import (
	"regexp"
	"strings"

	"github.com/baton-sqs/baton"
)

// Subscriptions of the protocols Baton delivers nothing to (email,
// email-json, sms, application, lambda, firehose) are checked, stored,
// confirmed and listed as AWS does them; the fan-out records what AWS
// would have sent them (record.go) and sends nothing (docs/sns.md, "Other
// protocols").

// delivers reports whether Baton delivers to subscriptions of protocol:
// sqs queues and HTTP/S endpoints only.
func delivers(protocol string) bool { return protocol == "sqs" || isHTTP(protocol) }

// checkOtherEndpoint checks the endpoint of a protocol Baton delivers
// nothing to, as AWS checks it. Texts AWS was seen to answer: sms's and
// application's; the others are Baton's, in SNS's usual form.
func checkOtherEndpoint(protocol, endpoint string) error {
	switch protocol {
	case "sms":
		if !validSMSEndpoint(endpoint) {
			return baton.Errorf(baton.ErrSNSInvalidParameter, "Invalid SMS endpoint: %s", endpoint)
		}
	case "application":
		// Baton keeps no platform endpoints: every one is missing.
		return invalidParameter("Endpoint Reason: Endpoint does not exist for endpoint arn%s", endpoint)
	case "lambda":
		if !lambdaARN.MatchString(endpoint) {
			return invalidParameter("Lambda endpoint ARN")
		}
	case "firehose":
		if !firehoseARN.MatchString(endpoint) {
			return invalidParameter("Firehose endpoint ARN")
		}
	case "email", "email-json":
		if local, domain, ok := strings.Cut(endpoint, "@"); !ok || local == "" || domain == "" || strings.ContainsAny(endpoint, " \t\r\n") {
			return invalidParameter("Email address")
		}
	}
	return nil
}

var (
	lambdaARN   = regexp.MustCompile(`^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]+)?$`)
	firehoseARN = regexp.MustCompile(`^arn:aws[a-z-]*:firehose:[a-z0-9-]+:[0-9]{12}:deliverystream/[A-Za-z0-9_.-]{1,64}$`)
	e164        = regexp.MustCompile(`^\+?[1-9][0-9]{1,14}$`)
	smsSeps     = regexp.MustCompile(`[./-]{2,}|^[./-]|[./-]$`)
)

// validSMSEndpoint: a phone number in E.164 form, its digits optionally
// separated by single dots, slashes or hyphens ("+1-555-0100"), none
// leading or trailing.
func validSMSEndpoint(endpoint string) bool {
	if smsSeps.MatchString(endpoint) {
		return false
	}
	return e164.MatchString(strings.NewReplacer(".", "", "/", "", "-", "").Replace(endpoint))
}

// endpointAccount is the account of an ARN endpoint, "" for endpoints
// that are not ARNs.
func endpointAccount(endpoint string) string {
	parts := strings.Split(endpoint, ":")
	if len(parts) < 6 || parts[0] != "arn" {
		return ""
	}
	return parts[4]
}

// pendingElsewhere: email endpoints, and lambda and firehose endpoints
// of another account than the topic's, wait for a confirmation, as on
// AWS.
func pendingElsewhere(t *baton.Topic, protocol, endpoint string) bool {
	switch protocol {
	case "email", "email-json":
		return true
	case "lambda", "firehose":
		return endpointAccount(endpoint) != t.Account
	}
	return false
}

// checkSubscriptionRole: a firehose subscription needs the role SNS
// would write to the stream with.
func checkSubscriptionRole(protocol string, attrs map[string]string) error {
	if protocol == "firehose" && attrs["SubscriptionRoleArn"] == "" {
		return invalidParameter("Attributes Reason: SubscriptionRoleArn is required for firehose subscriptions")
	}
	return nil
}

// checkRawDelivery refuses RawMessageDelivery, true or false, to a
// protocol that has no raw delivery: only sqs, http, https and firehose
// have it (AWS's SNS Developer Guide, "Amazon SNS raw message delivery").
// The text is AWS's, as its answers were seen to give it.
func checkRawDelivery(protocol string, attrs map[string]string) error {
	if _, set := attrs["RawMessageDelivery"]; !set || delivers(protocol) || protocol == "firehose" {
		return nil
	}
	return invalidParameter("Delivery protocol [%s] does not support raw message delivery.", protocol)
}

// noteUndelivered logs, once at its creation, that a subscription of a
// protocol Baton delivers nothing to is kept and nothing more.
func (s *Service) noteUndelivered(sub *baton.Subscription) {
	if delivers(sub.Protocol) {
		return
	}
	s.log.Warn("sns: subscription of protocol "+sub.Protocol+" is stored and listed; Baton delivers nothing to it and records what AWS would send (GET /admin/api/sns/deliveries)",
		"subscription", SubscriptionARN(sub), "endpoint", sub.Endpoint, "pending", sub.Pending)
}

// logConfirmation is what Baton does instead of sending a pending
// subscription of a protocol it delivers nothing to (an email address)
// its confirmation: it logs the token, with which ConfirmSubscription, or
// a visit of the SubscribeURL, confirms it.
func (s *Service) logConfirmation(sub *baton.Subscription, token, subscribeURL string) {
	s.log.Info("sns: Baton sends no "+sub.Protocol+" confirmation; confirm the subscription with ConfirmSubscription and this token, or visit the SubscribeURL",
		"subscription", SubscriptionARN(sub), "endpoint", sub.Endpoint, "token", token, "subscribe_url", subscribeURL)
}
