package sns

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/baton-sqs/baton"
)

// tokenLifetime is how long a confirmation token confirms: AWS's two days.
const tokenLifetime = 48 * time.Hour

// confirmationToken makes the Token of a subscription's confirmation:
// the subscription it confirms and when it expires (and, for a token that
// restores a deleted subscription, what restores it: restoreParts), in
// hex, followed by an HMAC of them under a key derived from the store's
// signing key, so that every server of a shared store reads the tokens any
// of them made and no one can forge one.
func (s *Service) confirmationToken(ctx context.Context, sub *baton.Subscription, restore ...string) (string, error) {
	key, err := s.tokenKey(ctx)
	if err != nil {
		return "", err
	}
	payload := strings.Join(append([]string{sub.Region, sub.Account, sub.Topic, sub.ID,
		strconv.FormatInt(s.clock.Now().Add(tokenLifetime).Unix(), 10)}, restore...), "\x00")
	return hex.EncodeToString([]byte(payload)) + hex.EncodeToString(tokenMAC(key, []byte(payload))), nil
}

func tokenMAC(key, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(payload)
	return m.Sum(nil)
}

// tokenKey is the key of the tokens' HMAC.
func (s *Service) tokenKey(ctx context.Context) ([]byte, error) {
	sig, err := s.signer(ctx)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte("baton sns confirmation token\x00"), x509.MarshalPKCS1PrivateKey(sig.key)...))
	return sum[:], nil
}

// ConfirmParams are the arguments of ConfirmSubscription.
type ConfirmParams struct {
	TopicARN string
	Token    string
	// AuthenticateOnUnsubscribe "true" on a signed call makes the
	// subscription refuse unsigned unsubscribes (unsubscribe.go).
	AuthenticateOnUnsubscribe string
	// Authenticated says the call was signed (a visit of the SubscribeURL
	// is not).
	Authenticated bool
}

// ConfirmSubscription confirms the subscription a token names and returns
// its ARN, as AWS does: the token names the subscription (a TopicArn of
// the right region but another topic confirms anyway), a confirmed one is
// confirmed again, a malformed token is "Invalid token" and a well-formed
// one that names nothing, or expired, "Invalid parameter: Token".
func (s *Service) ConfirmSubscription(ctx context.Context, c Caller, p ConfirmParams) (string, error) {
	if p.TopicARN == "" {
		return "", missing("TopicArn")
	}
	if p.Token == "" {
		return "", missing("Token")
	}
	if _, err := s.parseTopicARN(c, "Topic", p.TopicARN); err != nil {
		return "", invalidParameter("Topic")
	}
	sub, restore, err := s.tokenSubscription(ctx, c, p.Token)
	if err != nil {
		return "", err
	}
	if restore {
		return s.restoreSubscription(ctx, sub, p)
	}
	if !sub.Pending {
		return SubscriptionARN(sub), nil
	}
	if s.pendingExpired(sub) {
		return "", invalidParameter("Token") // deleted at its deadline (unsubscribe.go)
	}
	sub.Pending = false
	markConfirmed(sub, p)
	if err := s.store.SubscriptionUpdate(ctx, sub); errors.Is(err, baton.ErrNotFound) {
		return "", invalidParameter("Token")
	} else if err != nil {
		return "", storeErr(err, "confirm subscription")
	}
	s.log.Info("sns: subscription confirmed", "subscription", SubscriptionARN(sub), "endpoint", sub.Endpoint)
	return SubscriptionARN(sub), nil
}

// markConfirmed records how a subscription was confirmed: "true if the
// subscription confirmation request was authenticated" (AWS's SNS API
// reference, GetSubscriptionAttributes), and whether unsigned unsubscribes
// are refused from now on.
func markConfirmed(sub *baton.Subscription, p ConfirmParams) {
	if sub.Attributes == nil {
		sub.Attributes = make(map[string]string)
	}
	sub.Attributes["ConfirmationWasAuthenticated"] = strconv.FormatBool(p.Authenticated)
	delete(sub.Attributes, authOnUnsubscribe)
	if p.Authenticated && strings.EqualFold(p.AuthenticateOnUnsubscribe, "true") {
		sub.Attributes[authOnUnsubscribe] = "true"
	}
}

// tokenSubscription reads a token and returns the subscription it names:
// loaded from the store, or for a token restoring a deleted subscription
// (restore true) as the token carries it.
func (s *Service) tokenSubscription(ctx context.Context, c Caller, token string) (sub *baton.Subscription, restore bool, err error) {
	raw, err := hex.DecodeString(token)
	if err != nil || len(raw) <= sha256.Size {
		return nil, false, baton.Errorf(baton.ErrSNSInvalidParameter, "Invalid token")
	}
	payload, mac := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	key, err := s.tokenKey(ctx)
	if err != nil {
		return nil, false, err
	}
	parts := strings.SplitN(string(payload), "\x00", 5+restoreParts)
	if !hmac.Equal(mac, tokenMAC(key, payload)) || len(parts) != 5 && len(parts) != 5+restoreParts {
		return nil, false, invalidParameter("Token")
	}
	if parts[0] != s.region(c) {
		return nil, false, invalidParameter("Topic")
	}
	expiry, err := strconv.ParseInt(parts[4], 10, 64)
	if err != nil || !s.clock.Now().Before(time.Unix(expiry, 0)) {
		return nil, false, invalidParameter("Token")
	}
	if len(parts) > 5 {
		sub, err := restoredSubscription(parts)
		return sub, true, err
	}
	sub, err = s.store.SubscriptionGet(ctx, parts[0], parts[1], parts[2], parts[3])
	if errors.Is(err, baton.ErrNotFound) {
		return nil, false, invalidParameter("Token")
	}
	if err != nil {
		return nil, false, storeErr(err, "get subscription")
	}
	return sub, false, nil
}

// confirmation is a SubscriptionConfirmation, or an
// UnsubscribeConfirmation, as SNS posts it: both have the same members.
type confirmation struct {
	// Type is SubscriptionConfirmation unless set.
	Type                                              string
	MessageID, Token, TopicARN, Message, SubscribeURL string
	Timestamp                                         time.Time
	SignatureVersion, Signature, SigningCertURL       string
}

func (m confirmation) kind() string {
	if m.Type == "" {
		return "SubscriptionConfirmation"
	}
	return m.Type
}

// stringToSign is what a confirmation's signature covers.
func (m confirmation) stringToSign() string {
	var b strings.Builder
	for _, kv := range [][2]string{{"Message", m.Message}, {"MessageId", m.MessageID}, {"SubscribeURL", m.SubscribeURL},
		{"Timestamp", m.Timestamp.UTC().Format(timestampLayout)}, {"Token", m.Token}, {"TopicArn", m.TopicARN},
		{"Type", m.kind()}} {
		b.WriteString(kv[0] + "\n" + kv[1] + "\n")
	}
	return b.String()
}

// body lays the confirmation out as a notification's envelope is.
func (m confirmation) body() []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	member(&b, "Type", m.kind(), true)
	member(&b, "MessageId", m.MessageID, true)
	member(&b, "Token", m.Token, true)
	member(&b, "TopicArn", m.TopicARN, true)
	member(&b, "Message", m.Message, true)
	member(&b, "SubscribeURL", m.SubscribeURL, true)
	member(&b, "Timestamp", m.Timestamp.UTC().Format(timestampLayout), true)
	member(&b, "SignatureVersion", m.SignatureVersion, true)
	member(&b, "Signature", m.Signature, true)
	member(&b, "SigningCertURL", m.SigningCertURL, false)
	b.WriteString("}")
	return b.Bytes()
}

// sendConfirmation queues the SubscriptionConfirmation of a pending HTTP/S
// subscription for its endpoint, or sends it to a queue of another
// account, or for a protocol Baton delivers nothing to logs its token;
// signed under the topic's
// SignatureVersion. baseURL is the server's, which the SubscribeURL and
// SigningCertURL start with.
func (s *Service) sendConfirmation(ctx context.Context, t *baton.Topic, sub *baton.Subscription, baseURL string) error {
	token, err := s.confirmationToken(ctx, sub)
	if err != nil {
		return err
	}
	topicARN := TopicARN(t.Region, t.Account, t.Name)
	if !delivers(sub.Protocol) {
		s.logConfirmation(sub, token, subscribeURL(baseURL, topicARN, token))
		return s.recordConfirmation(ctx, t, sub, token, baseURL) // record_payload.go
	}
	m, err := s.signedConfirmation(ctx, t, confirmation{Token: token, Message: confirmationMessage(topicARN)}, baseURL)
	if err != nil {
		return err
	}
	if sub.Protocol == "sqs" {
		return s.confirmToQueue(ctx, sub, string(m.body()))
	}
	return s.enqueue(ctx, job{Type: "SubscriptionConfirmation", Subscription: SubscriptionARN(sub), MessageID: m.MessageID,
		TopicARN: topicARN}, string(m.body()))
}

// confirmationMessage is a SubscriptionConfirmation's Message.
func confirmationMessage(topicARN string) string {
	return "You have chosen to subscribe to the topic " + topicARN + ".\nTo confirm the subscription, visit the SubscribeURL included in this message."
}

// subscribeURL is the URL that confirms a token, unsigned.
func subscribeURL(baseURL, topicARN, token string) string {
	return baseURL + "/?Action=ConfirmSubscription&TopicArn=" + topicARN + "&Token=" + token
}

// signedConfirmation completes m (its Type, Token and Message set) for
// topic t and signs it under the topic's SignatureVersion. baseURL is the
// server's, which the SubscribeURL and SigningCertURL start with.
func (s *Service) signedConfirmation(ctx context.Context, t *baton.Topic, m confirmation, baseURL string) (confirmation, error) {
	sig, err := s.signer(ctx)
	if err != nil {
		return m, err
	}
	m.MessageID, m.TopicARN = newMessageID(), TopicARN(t.Region, t.Account, t.Name)
	m.SubscribeURL = subscribeURL(baseURL, m.TopicARN, m.Token)
	m.Timestamp, m.SignatureVersion, m.SigningCertURL = s.clock.Now(), signatureVersion(t), baseURL+"/"+sig.certName
	m.Signature, err = sig.sign(m.stringToSign(), m.SignatureVersion)
	return m, err
}

// signatureVersion is the topic's SignatureVersion, 1 unless set.
func signatureVersion(t *baton.Topic) string {
	if v := t.Attributes["SignatureVersion"]; v != "" {
		return v
	}
	return "1"
}
