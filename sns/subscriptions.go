package sns

import (
	"context"
	"errors"
	"maps"
	"strings"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/ids"
)

// SubscribeParams are the arguments of Subscribe.
type SubscribeParams struct {
	TopicARN   string
	Protocol   string
	Endpoint   string
	Attributes map[string]string
	// ReturnSubscriptionARN asks for the ARN even of a subscription pending
	// confirmation (HTTP/S), else answered "pending confirmation".
	ReturnSubscriptionARN bool
	// BaseURL is the scheme://host an HTTP/S subscription's SubscribeURL
	// starts with: the server's, as its queue URLs.
	BaseURL string
}

// protocols are the subscription protocols AWS knows; Baton delivers to
// sqs, http and https, and keeps the others (otherproto.go).
var protocols = map[string]bool{
	"http": true, "https": true, "email": true, "email-json": true, "sms": true,
	"sqs": true, "application": true, "lambda": true, "firehose": true,
}

// Subscribe subscribes an SQS queue, named by its ARN, or an HTTP/S
// endpoint to a topic and returns the subscription's ARN. A queue's
// subscription is confirmed at once, as AWS confirms a queue of the topic
// owner's account; an endpoint's is pending until confirmed, and is sent
// a SubscriptionConfirmation (confirm.go). It is idempotent on
// (topic, protocol, endpoint): the same or no attributes give the same
// ARN, others InvalidParameter "Subscription already exists with different
// attributes". A queue of another account than the topic's is pending
// too, and its confirmation is sent to the queue, as AWS sends it.
// Subscriptions of other protocols are checked, kept and confirmed as on
// AWS, and delivered nothing (otherproto.go).
func (s *Service) Subscribe(ctx context.Context, c Caller, p SubscribeParams) (string, error) {
	t, err := s.topic(ctx, c, "TopicArn", p.TopicARN)
	if err != nil {
		return "", err
	}
	attrs, err := checkSubscribe(c, t, p)
	if err != nil {
		return "", err
	}
	sub := &baton.Subscription{Region: t.Region, Account: t.Account, Topic: t.Name, ID: ids.NewUUID(),
		Protocol: p.Protocol, Endpoint: p.Endpoint, Owner: c.Account, Principal: "arn:aws:iam::" + c.Account + ":root",
		Attributes: attrs, CreatedAt: s.clock.Now(), Pending: needsConfirmation(t, p.Protocol, p.Endpoint)}
	// The store keeps one subscription per (topic, protocol, endpoint):
	// look for it, else create it; a creation that finds it made
	// meanwhile looks again.
	for range 2 {
		arn, again, err := s.subscribeOnce(ctx, t, sub, p)
		if !again {
			return arn, err
		}
	}
	return "", storeErr(errors.New("the subscription was created and deleted while it was looked for"), "subscribe")
}

// checkSubscribe checks a Subscribe to t by c and returns its attributes.
func checkSubscribe(c Caller, t *baton.Topic, p SubscribeParams) (map[string]string, error) {
	if err := checkFIFOProtocol(t, p.Protocol); err != nil {
		return nil, err
	}
	if err := checkEndpoint(c, t, p.Protocol, p.Endpoint); err != nil {
		return nil, err
	}
	attrs, err := checkSubscriptionAttributes(p.Attributes)
	if err != nil {
		return nil, err
	}
	if err := checkSubscriptionRole(p.Protocol, attrs); err != nil {
		return nil, err
	}
	if err := checkRawDelivery(p.Protocol, attrs); err != nil {
		return nil, err
	}
	if err := checkFIFODeadLetter(t.Name, p.Protocol, p.Endpoint, attrs["RedrivePolicy"]); err != nil {
		return nil, invalidParameter("Attributes Reason: %s", strings.TrimPrefix(baton.AsError(err).Message, "Invalid parameter: "))
	}
	return attrs, nil
}

// subscribeOnce answers p with the topic's subscription of its protocol and
// endpoint if there is one, else creates sub; again says that one was
// created by another meanwhile, so that the caller looks again.
func (s *Service) subscribeOnce(ctx context.Context, t *baton.Topic, sub *baton.Subscription, p SubscribeParams) (arn string, again bool, err error) {
	old, err := s.findSubscription(ctx, t, p.Protocol, p.Endpoint)
	if err != nil {
		return "", false, err
	}
	if old != nil && s.pendingExpired(old) {
		// Deleted at its deadline, as far as anyone can tell: its
		// expiry job may not have run yet.
		if err := s.store.SubscriptionDelete(ctx, old.Region, old.Account, old.Topic, old.ID); err != nil && !errors.Is(err, baton.ErrNotFound) {
			return "", false, storeErr(err, "delete subscription")
		}
		old = nil
	}
	if old != nil {
		if !sameSubscriptionAttributes(old.Attributes, sub.Attributes) {
			return "", false, invalidParameter("Attributes Reason: Subscription already exists with different attributes")
		}
		arn, err := s.subscribed(ctx, t, old, p)
		return arn, false, err
	}
	if err := s.checkNewSubscription(ctx, t, sub.Attributes); err != nil {
		return "", false, err
	}
	if err := s.checkLargeTopicSubscription(ctx, t, p.Protocol); err != nil {
		return "", false, err
	}
	if sub.Pending {
		if err := s.schedulePendingExpiry(ctx, sub); err != nil { // unsubscribe.go
			return "", false, err
		}
	}
	err = s.store.SubscriptionCreate(ctx, sub)
	switch {
	case err == nil:
		s.noteUndelivered(sub)
		arn, err := s.subscribed(ctx, t, sub, p)
		return arn, false, err
	case errors.Is(err, baton.ErrNotFound):
		return "", false, errTopicNotFound()
	case errors.Is(err, baton.ErrExists):
		return "", true, nil
	default:
		return "", false, storeErr(err, "create subscription")
	}
}

// findSubscription returns the topic's subscription of protocol and
// endpoint, or nil.
func (s *Service) findSubscription(ctx context.Context, t *baton.Topic, protocol, endpoint string) (*baton.Subscription, error) {
	subs, err := s.store.SubscriptionList(ctx, baton.SubscriptionListParams{Region: t.Region, Account: t.Account, Topic: t.Name})
	if err != nil {
		return nil, storeErr(err, "list subscriptions")
	}
	for _, sub := range subs {
		if sub.Protocol == protocol && sub.Endpoint == endpoint {
			return sub, nil
		}
	}
	return nil, nil
}

// checkEndpoint checks a subscription's protocol and endpoint: an sqs
// endpoint is a queue ARN (the queue need not exist, as on AWS), and a
// FIFO queue cannot subscribe to a standard topic.
func checkEndpoint(c Caller, t *baton.Topic, protocol, endpoint string) error {
	switch {
	case protocol == "":
		return missing("Protocol")
	case !protocols[protocol]:
		return invalidParameter("Amazon SNS does not support this protocol string: %s", protocol)
	case isHTTP(protocol):
		return checkHTTPEndpoint(protocol, endpoint)
	case protocol != "sqs":
		return checkOtherEndpoint(protocol, endpoint)
	}
	q, ok := engine.QueueRefOfARN(endpoint)
	if !ok {
		return invalidParameter("SQS endpoint ARN")
	}
	if baton.IsFIFOName(q.Name) && t.Attributes["FifoTopic"] != "true" {
		return invalidParameter("Invalid parameter: Endpoint Reason: FIFO SQS Queues can not be subscribed to standard SNS topics")
	}
	return nil
}

// subscriptionAttributes are the attributes a subscription may be given;
// those Baton does not honour yet are refused, saying so.
var subscriptionAttributes = map[string]bool{
	"RawMessageDelivery":  true,
	"FilterPolicy":        true,
	"FilterPolicyScope":   true,
	"RedrivePolicy":       true,
	"DeliveryPolicy":      true,
	"SubscriptionRoleArn": true,
	"ReplayPolicy":        false,
}

// checkSubscriptionAttributes checks Subscribe's attributes, as
// SetSubscriptionAttributes checks one, each refusal prefixed "Attributes
// Reason: " as AWS prefixes it, and returns them normalised.
func checkSubscriptionAttributes(attrs map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(attrs))
	for name, v := range attrs {
		nv, err := checkSubscriptionAttribute(name, v)
		if err != nil {
			e := baton.AsError(err)
			return nil, invalidParameter("Attributes Reason: %s", strings.TrimPrefix(e.Message, "Invalid parameter: "))
		}
		if nv != "" || name != "FilterPolicy" { // "" sets no policy
			out[name] = nv
		}
	}
	if err := checkFilterAttributes(out); err != nil {
		e := baton.AsError(err)
		return nil, invalidParameter("Attributes Reason: %s", strings.TrimPrefix(e.Message, "Invalid parameter: "))
	}
	return out, nil
}

// checkSubscriptionAttribute checks one attribute and returns its value as
// stored: RawMessageDelivery takes true or false in any case and keeps it
// in lower case.
func checkSubscriptionAttribute(name, v string) (string, error) {
	built, known := subscriptionAttributes[name]
	switch {
	case !known:
		return "", invalidParameter("AttributeName")
	case !built:
		return "", notBuilt("%s", name)
	case name == "FilterPolicy":
		return v, nil // checked with its scope: checkFilterAttributes
	case name == "FilterPolicyScope":
		return v, checkFilterScope(v)
	case name == "RedrivePolicy":
		return checkRedrivePolicy(v)
	case name == "DeliveryPolicy":
		return checkSubscriptionDeliveryPolicy(v)
	case name == "SubscriptionRoleArn":
		return v, nil // kept: Baton writes to no firehose
	}
	lv := strings.ToLower(v)
	if lv != "true" && lv != "false" {
		return "", invalidParameter("RawMessageDelivery: Invalid value [%s]. Must be true or false.", v)
	}
	return lv, nil
}

// subscriptionDefaults are the values of attributes never set.
var subscriptionDefaults = map[string]string{"RawMessageDelivery": "false", "FilterPolicyScope": ScopeAttributes, "FilterPolicy": ""}

// sameSubscriptionAttributes: every attribute given equals the
// subscription's, a default equal to its absence.
func sameSubscriptionAttributes(have, given map[string]string) bool {
	for k, v := range given {
		old, ok := have[k]
		if !ok {
			old, ok = subscriptionDefaults[k]
		}
		if !ok || old != v {
			return false
		}
	}
	return true
}

// subscription loads the subscription an ARN names, or NotFound
// "Subscription does not exist".
func (s *Service) subscription(ctx context.Context, c Caller, arn string) (*baton.Subscription, error) {
	t, id, err := s.parseSubscriptionARN(c, arn)
	if err != nil {
		return nil, err
	}
	if t.account != c.Account {
		return nil, errSubscriptionNotFound()
	}
	sub, err := s.store.SubscriptionGet(ctx, t.region, t.account, t.name, id)
	if errors.Is(err, baton.ErrNotFound) {
		return nil, errSubscriptionNotFound()
	}
	if err != nil {
		return nil, storeErr(err, "get subscription")
	}
	return sub, nil
}

// GetSubscriptionAttributes returns a subscription's attributes as AWS
// renders those of a confirmed sqs subscription.
func (s *Service) GetSubscriptionAttributes(ctx context.Context, c Caller, arn string) (map[string]string, error) {
	sub, err := s.subscription(ctx, c, arn)
	if err != nil {
		return nil, err
	}
	out := map[string]string{
		"ConfirmationWasAuthenticated": "true",
		"Endpoint":                     sub.Endpoint,
		"Owner":                        sub.Owner,
		"PendingConfirmation":          "false",
		"Protocol":                     sub.Protocol,
		"RawMessageDelivery":           "false",
		"SubscriptionArn":              SubscriptionARN(sub),
		"SubscriptionPrincipal":        sub.Principal,
		"TopicArn":                     TopicARN(sub.Region, sub.Account, sub.Topic),
	}
	maps.Copy(out, sub.Attributes)
	delete(out, authOnUnsubscribe) // Baton's, not AWS's
	showFilterAttributes(out)
	if err := s.confirmationAttributes(ctx, sub, out); err != nil {
		return nil, err
	}
	return out, nil
}

// SetSubscriptionAttributes sets one attribute of a subscription.
func (s *Service) SetSubscriptionAttributes(ctx context.Context, c Caller, arn, name string, value *string) error {
	if name == "" {
		return missing("AttributeName")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, err := s.subscription(ctx, c, arn)
	if err != nil {
		return err
	}
	v := ""
	if value != nil {
		v = *value
	}
	nv, err := checkSubscriptionAttribute(name, v)
	if err != nil {
		return err
	}
	attrs := maps.Clone(sub.Attributes)
	if attrs == nil {
		attrs = make(map[string]string)
	}
	attrs[name] = nv
	if nv == "" {
		delete(attrs, name) // "" removes a policy
	}
	if err := checkFilterAttributes(attrs); err != nil {
		return err
	}
	if err := s.checkSubscriptionChange(ctx, sub, name, attrs); err != nil {
		return err
	}
	sub.Attributes = attrs
	if err := s.store.SubscriptionUpdate(ctx, sub); errors.Is(err, baton.ErrNotFound) {
		return errSubscriptionNotFound()
	} else if err != nil {
		return storeErr(err, "update subscription")
	}
	return nil
}

// SubscriptionEntry is one row of a subscription listing.
type SubscriptionEntry struct {
	SubscriptionARN string
	Owner           string
	Protocol        string
	Endpoint        string
	TopicARN        string
}

// ListSubscriptions returns a page of the caller's subscriptions in its
// region, 100 at most, and the token of the next page, "" if none.
func (s *Service) ListSubscriptions(ctx context.Context, c Caller, nextToken string) ([]SubscriptionEntry, string, error) {
	return s.listSubscriptions(ctx, baton.SubscriptionListParams{Region: s.region(c), Account: c.Account}, nextToken)
}

// ListSubscriptionsByTopic is ListSubscriptions for one topic; NotFound
// if the topic does not exist.
func (s *Service) ListSubscriptionsByTopic(ctx context.Context, c Caller, topicARN, nextToken string) ([]SubscriptionEntry, string, error) {
	t, err := s.topic(ctx, c, "TopicArn", topicARN)
	if err != nil {
		return nil, "", err
	}
	return s.listSubscriptions(ctx, baton.SubscriptionListParams{Region: t.Region, Account: t.Account, Topic: t.Name}, nextToken)
}

func (s *Service) listSubscriptions(ctx context.Context, p baton.SubscriptionListParams, nextToken string) ([]SubscriptionEntry, string, error) {
	after, err := decodeToken(nextToken)
	if err != nil {
		return nil, "", err
	}
	if after != "" {
		var ok bool
		if p.AfterTopic, p.AfterID, ok = strings.Cut(after, "\x00"); !ok || !anyTopicName(p.AfterTopic) || p.AfterID == "" {
			return nil, "", errBadToken()
		}
	}
	p.Limit = pageSize + 1
	subs, err := s.store.SubscriptionList(ctx, p)
	if err != nil {
		return nil, "", storeErr(err, "list subscriptions")
	}
	next := ""
	if len(subs) > pageSize {
		subs = subs[:pageSize]
		last := subs[pageSize-1]
		next = encodeToken(last.Topic + "\x00" + last.ID)
	}
	out := make([]SubscriptionEntry, len(subs))
	for i, sub := range subs {
		arn := SubscriptionARN(sub)
		if sub.Pending {
			arn = "PendingConfirmation"
		}
		out[i] = SubscriptionEntry{SubscriptionARN: arn, Owner: sub.Owner, Protocol: sub.Protocol, Endpoint: sub.Endpoint,
			TopicARN: TopicARN(sub.Region, sub.Account, sub.Topic)}
	}
	return out, next, nil
}
