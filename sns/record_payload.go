package sns

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
)

// What AWS sends each protocol Baton does not deliver to (docs/sns.md,
// "Other protocols"), as AWS's documentation, its emails and its Lambda
// events show it. record.go keeps it.

// defaultEmailSubject is the subject of an email published without one,
// as AWS's emails are seen to have it.
const defaultEmailSubject = "AWS Notification Message"

// recordCopy records what AWS would have sent sub, a confirmed
// subscription of a protocol Baton does not deliver to whose filter policy
// matched, and returns the copy's outcome.
func (s *Service) recordCopy(ctx context.Context, pub *publication, sub *baton.Subscription) CopyOutcome {
	r := DeliveryRecord{Type: "Notification", At: pub.at, Region: sub.Region, Account: sub.Account, MessageID: pub.id,
		TopicARN: TopicARN(sub.Region, sub.Account, sub.Topic), SubscriptionARN: SubscriptionARN(sub),
		Protocol: sub.Protocol, Endpoint: sub.Endpoint, Raw: sub.Attributes["RawMessageDelivery"] == "true", Attributes: pub.Attributes}
	var err error
	if r.Subject, r.Payload, err = s.payloadFor(ctx, pub, sub); err != nil {
		s.log.Error("sns: a copy for a protocol Baton does not deliver to cannot be recorded", "subscription", r.SubscriptionARN, "err", err)
		return failed(sub, "not recorded: "+err.Error())
	}
	s.keep(r)
	return recorded(sub)
}

// confirmationSubject is the subject of the email that asks to confirm a
// subscription, as AWS's documentation names it.
const confirmationSubject = "AWS Notification - Subscription Confirmation"

// recordConfirmation records the confirmation AWS would send a pending
// email or email-json subscription: the email's text (AWS's is HTML, its
// link "Confirm subscription" the SubscribeURL, which Baton's text gives),
// or the SubscriptionConfirmation document HTTP/S endpoints get. A test
// confirms the subscription with its SubscribeURL, or with ConfirmSubscription
// and its token. Other protocols' confirmations are only logged.
func (s *Service) recordConfirmation(ctx context.Context, t *baton.Topic, sub *baton.Subscription, token, baseURL string) error {
	topicARN := TopicARN(t.Region, t.Account, t.Name)
	r := DeliveryRecord{Type: "SubscriptionConfirmation", At: s.clock.Now(), Region: sub.Region, Account: sub.Account,
		TopicARN: topicARN, SubscriptionARN: SubscriptionARN(sub), Protocol: sub.Protocol, Endpoint: sub.Endpoint}
	switch sub.Protocol {
	case "email":
		r.MessageID, r.Subject = newMessageID(), confirmationSubject
		r.Payload = "You have chosen to subscribe to the topic: \n" + topicARN +
			"\n\nTo confirm this subscription, click or visit the link below (If this was in error no action is necessary): \n" +
			subscribeURL(baseURL, topicARN, token)
	case "email-json":
		m, err := s.signedConfirmation(ctx, t, confirmation{Token: token, Message: confirmationMessage(topicARN)}, baseURL)
		if err != nil {
			return err
		}
		r.MessageID, r.Payload = m.MessageID, string(m.body())
	default:
		return nil
	}
	s.keep(r)
	return nil
}

// recorded is the outcome of a copy recorded instead of delivered.
func recorded(sub *baton.Subscription) CopyOutcome {
	o := outcomeOf(sub, CopyRecorded)
	o.Reason = "Baton delivers nothing to " + sub.Protocol + " subscriptions; what AWS would send is recorded"
	return o
}

// payloadFor is what AWS sends sub of the publication, and an email's
// subject.
func (s *Service) payloadFor(ctx context.Context, pub *publication, sub *baton.Subscription) (subject, payload string, err error) {
	msg := pub.Message
	if pub.structure != nil {
		msg = pub.structure.forProtocol(sub.Protocol)
	}
	switch sub.Protocol {
	case "email":
		subject = defaultEmailSubject
		if pub.Subject != nil {
			subject = *pub.Subject
		}
		return subject, emailBody(msg, unsubscribeURL(pub, sub)), nil
	case "sms":
		return "", smsText(pub.displayName, msg), nil
	case "firehose":
		if sub.Attributes["RawMessageDelivery"] == "true" {
			return "", msg, nil
		}
		n := pub.notification(sub.Region, sub.Account, sub.Topic, sub.Protocol)
		n.UnsubscribeURL = unsubscribeURL(pub, sub)
		return "", firehoseRecord(n), nil
	}
	n, err := s.signedNotification(ctx, pub, sub)
	if err != nil {
		return "", "", err
	}
	if sub.Protocol == "lambda" {
		return "", lambdaEvent(n, SubscriptionARN(sub)), nil
	}
	return "", string(envelope(n)), nil // email-json: the envelope HTTP/S endpoints get
}

// emailBody is an email's text: the message, then the footer AWS's emails
// end with, its link Baton's UnsubscribeURL (AWS's links to a page of its
// own).
func emailBody(msg, unsubscribe string) string {
	return msg + "\n\n--\nIf you wish to stop receiving notifications from this topic, please click or visit the link below to unsubscribe:\n" +
		unsubscribe + "\n\nPlease do not reply directly to this email. If you have any questions or comments regarding this email, please contact us at https://aws.amazon.com/support"
}

// smsText is an SMS's text: the message, after the topic's DisplayName in
// upper case and "> " if it has one (AWS's SNS Developer Guide,
// "Publishing SMS messages to an Amazon SNS topic").
func smsText(displayName, msg string) string {
	if displayName == "" {
		return msg
	}
	return strings.ToUpper(displayName) + "> " + msg
}

// attributeJSON is a message attribute as notifications other than the
// envelope carry it.
type attributeJSON struct {
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

func attributesJSON(attrs []MessageAttribute) map[string]attributeJSON {
	out := make(map[string]attributeJSON, len(attrs))
	for _, a := range attrs {
		v := a.StringValue
		if a.IsBinary() {
			v = base64.StdEncoding.EncodeToString(a.BinaryValue)
		}
		out[a.Name] = attributeJSON{Type: a.DataType, Value: v}
	}
	return out
}

// firehoseRecord is the record a firehose subscription's stream gets: the
// notification as compact JSON, unsigned, as AWS's "Amazon SNS
// notification format for delivery to HTTP destinations" shows it.
func firehoseRecord(n notification) string {
	rec := struct {
		Type              string                   `json:"Type"`
		MessageID         string                   `json:"MessageId"`
		TopicARN          string                   `json:"TopicArn"`
		Subject           *string                  `json:"Subject,omitempty"`
		Message           string                   `json:"Message"`
		Timestamp         string                   `json:"Timestamp"`
		UnsubscribeURL    string                   `json:"UnsubscribeURL"`
		MessageAttributes map[string]attributeJSON `json:"MessageAttributes,omitempty"`
	}{"Notification", n.MessageID, n.TopicARN, n.Subject, n.Message, n.Timestamp.UTC().Format(timestampLayout), n.UnsubscribeURL, nil}
	if len(n.Attributes) > 0 {
		rec.MessageAttributes = attributesJSON(n.Attributes)
	}
	return compactJSON(rec)
}

// lambdaEvent is the event a lambda subscription's function is invoked
// with: one record of the signed notification, Subject null when the
// publish had none and MessageAttributes {} when it had none, as AWS's
// events carry them.
func lambdaEvent(n notification, subscriptionARN string) string {
	type snsJSON struct {
		Type              string                   `json:"Type"`
		MessageID         string                   `json:"MessageId"`
		TopicARN          string                   `json:"TopicArn"`
		Subject           *string                  `json:"Subject"`
		Message           string                   `json:"Message"`
		Timestamp         string                   `json:"Timestamp"`
		SignatureVersion  string                   `json:"SignatureVersion"`
		Signature         string                   `json:"Signature"`
		SigningCertURL    string                   `json:"SigningCertUrl"`
		UnsubscribeURL    string                   `json:"UnsubscribeUrl"`
		MessageAttributes map[string]attributeJSON `json:"MessageAttributes"`
	}
	type recordJSON struct {
		EventSource          string  `json:"EventSource"`
		EventVersion         string  `json:"EventVersion"`
		EventSubscriptionARN string  `json:"EventSubscriptionArn"`
		SNS                  snsJSON `json:"Sns"`
	}
	ev := struct {
		Records []recordJSON `json:"Records"`
	}{[]recordJSON{{"aws:sns", "1.0", subscriptionARN, snsJSON{"Notification", n.MessageID, n.TopicARN, n.Subject, n.Message,
		n.Timestamp.UTC().Format(timestampLayout), n.SignatureVersion, n.Signature, n.SigningCertURL, n.UnsubscribeURL,
		attributesJSON(n.Attributes)}}}}
	return compactJSON(ev)
}

// compactJSON writes v as JSON with <, > and & as they are.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // plain structs of strings always encode
	return strings.TrimSuffix(b.String(), "\n")
}

// publishSMS is a publish to a phone number: Baton sends no SMS, and
// records what it would have sent, as for an sms subscription. Baton's
// account is out of the SMS sandbox (GetSMSSandboxAccountStatus), so any
// number in E.164 form is taken.
func (s *Service) publishSMS(c Caller, p PublishParams) (PublishResult, error) {
	if p.TopicARN != "" || p.TargetARN != "" {
		return PublishResult{}, invalidParameter("PhoneNumber Reason: a publish takes one of TopicArn, TargetArn and PhoneNumber")
	}
	if !e164.MatchString(p.PhoneNumber) {
		return PublishResult{}, invalidParameter("PhoneNumber Reason: %s is not valid to publish to", p.PhoneNumber)
	}
	if p.MessageGroupID != nil || p.MessageDeduplicationID != nil {
		return PublishResult{}, invalidParameter("PhoneNumber Reason: a publish to a phone number takes no MessageGroupId or MessageDeduplicationId")
	}
	pub := &publication{PublishParams: p}
	if err := pub.check("messageAttributes"); err != nil {
		return PublishResult{}, err
	}
	msg := pub.Message
	if pub.structure != nil {
		msg = pub.structure.forProtocol("sms")
	}
	r := DeliveryRecord{Type: "Notification", At: s.clock.Now(), Region: s.region(c), Account: c.Account, MessageID: ids.NewUUID(),
		Protocol: "sms", Endpoint: p.PhoneNumber, Payload: msg, Attributes: p.Attributes}
	s.keep(r)
	s.log.Info("sns: Baton sends no SMS; the message is recorded (GET /admin/api/sns/deliveries)", "phone_number", p.PhoneNumber, "message_id", r.MessageID)
	return PublishResult{MessageID: r.MessageID}, nil
}
