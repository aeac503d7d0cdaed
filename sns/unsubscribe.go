package sns

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

// The end of a subscription's life, as AWS ends it (docs/sns.md, "HTTP/HTTPS
// subscriptions"): an HTTP/S endpoint is posted an UnsubscribeConfirmation
// when its subscription is deleted, whose token restores it; a
// subscription confirmed by a signed call with AuthenticateOnUnsubscribe
// refuses unsigned unsubscribes; and a subscription left pending for 48
// hours is deleted. The last two ride on the internal delivery queue
// (http.go), so that they are durable and every node of a shared store
// runs them.

const (
	// unsubscribeConfirmation is the message type, and the delivery's.
	unsubscribeConfirmation = "UnsubscribeConfirmation"
	// pendingExpiry is the internal queue's job that deletes a subscription
	// still pending at its deadline.
	pendingExpiry = "PendingExpiry"
	// authOnUnsubscribe is the attribute under which a subscription keeps
	// that unsigned unsubscribes are refused; it is not one of AWS's
	// attributes, so GetSubscriptionAttributes and exports leave it out.
	authOnUnsubscribe = "AuthenticateOnUnsubscribe"
	// pendingLifetime is how long a subscription may stay unconfirmed:
	// "automatic deletion of unconfirmed subscriptions once they have been
	// in a pending confirmation state for 48 hours" (AWS, May 2023).
	pendingLifetime = 48 * time.Hour
	// restoreParts are what a restoring token carries beyond a
	// confirmation token's five: protocol, endpoint, owner, principal and
	// the attributes as JSON.
	restoreParts = 5
	// longestWait is the longest an expiry job waits in one lease, under
	// the engine's 12-hour ceiling.
	longestWait = 12*time.Hour - 5*time.Minute
	// pendingExpiryDelay is how long a new expiry job waits before its
	// first look: SQS's longest delay.
	pendingExpiryDelay = 900
)

// UnsubscribeParams are the arguments of Unsubscribe.
type UnsubscribeParams struct {
	SubscriptionARN string
	// Authenticated says the call was signed (a visit of an UnsubscribeURL
	// is not).
	Authenticated bool
	// BaseURL is the server's, which an UnsubscribeConfirmation's
	// SubscribeURL and SigningCertURL start with.
	BaseURL string
}

// errAuthenticationRequired refuses an unsigned unsubscribe of a
// subscription confirmed with AuthenticateOnUnsubscribe. AWS documents
// the code for Unsubscribe (403 AuthorizationError); its text is Baton's.
func errAuthenticationRequired() *baton.Error {
	return baton.Errorf(baton.ErrSNSAuthorization,
		"This subscription requires authentication to unsubscribe: only the topic owner and the subscription owner can, with a signed request.")
}

// Unsubscribe deletes a subscription; one that does not exist is deleted
// already, as AWS answers. A subscription confirmed with
// AuthenticateOnUnsubscribe refuses an unsigned call. A confirmed HTTP/S
// subscription's endpoint is then posted an UnsubscribeConfirmation.
func (s *Service) Unsubscribe(ctx context.Context, c Caller, p UnsubscribeParams) error {
	t, id, err := s.parseSubscriptionARN(c, p.SubscriptionARN)
	if err != nil || t.account != c.Account {
		return err
	}
	sub, err := s.store.SubscriptionGet(ctx, t.region, t.account, t.name, id)
	if errors.Is(err, baton.ErrNotFound) {
		return nil
	}
	if err != nil {
		return storeErr(err, "get subscription")
	}
	if !p.Authenticated && sub.Attributes[authOnUnsubscribe] == "true" {
		return errAuthenticationRequired()
	}
	if err := s.store.SubscriptionDelete(ctx, t.region, t.account, t.name, id); errors.Is(err, baton.ErrNotFound) {
		return nil // deleted meanwhile, by a call that says goodbye itself
	} else if err != nil {
		return storeErr(err, "delete subscription")
	}
	if !isHTTP(sub.Protocol) || sub.Pending {
		return nil
	}
	if err := s.sendUnsubscribeConfirmation(ctx, sub, p.BaseURL); err != nil {
		s.log.Error("sns: the subscription is deleted, and its UnsubscribeConfirmation cannot be queued for the endpoint",
			"subscription", SubscriptionARN(sub), "endpoint", sub.Endpoint, "err", err)
		return err
	}
	return nil
}

// sendUnsubscribeConfirmation queues, durably, the signed
// UnsubscribeConfirmation of a deleted subscription for its endpoint. Its
// Token, and its SubscribeURL, restore the subscription as it was: the
// token carries it.
func (s *Service) sendUnsubscribeConfirmation(ctx context.Context, sub *baton.Subscription, baseURL string) error {
	t, err := s.store.TopicGet(ctx, sub.Region, sub.Account, sub.Topic)
	if errors.Is(err, baton.ErrNotFound) {
		return nil // the topic went with it: nothing to restore
	}
	if err != nil {
		return storeErr(err, "get topic")
	}
	attrs, err := json.Marshal(settableAttributes(sub.Attributes))
	if err != nil {
		return err
	}
	token, err := s.confirmationToken(ctx, sub, sub.Protocol, sub.Endpoint, sub.Owner, sub.Principal, string(attrs))
	if err != nil {
		return err
	}
	arn := SubscriptionARN(sub)
	m, err := s.signedConfirmation(ctx, t, confirmation{Type: unsubscribeConfirmation, Token: token,
		Message: "You have chosen to deactivate subscription " + arn +
			".\nTo cancel this operation and restore the subscription, visit the SubscribeURL included in this message."}, baseURL)
	if err != nil {
		return err
	}
	return s.enqueue(ctx, job{Type: unsubscribeConfirmation, Subscription: arn, MessageID: m.MessageID, TopicARN: m.TopicARN,
		Endpoint: sub.Endpoint, Protocol: sub.Protocol}, string(m.body()))
}

// settableAttributes are a subscription's attributes that Subscribe
// takes, without those Baton records of its confirmation.
func settableAttributes(attrs map[string]string) map[string]string {
	out := maps.Clone(attrs)
	maps.DeleteFunc(out, func(k, _ string) bool { return !subscriptionAttributes[k] })
	return out
}

// restoredSubscription is the subscription a restoring token carries:
// confirmation token parts then restoreParts.
func restoredSubscription(parts []string) (*baton.Subscription, error) {
	var attrs map[string]string
	if err := json.Unmarshal([]byte(parts[9]), &attrs); err != nil {
		return nil, invalidParameter("Token")
	}
	return &baton.Subscription{Region: parts[0], Account: parts[1], Topic: parts[2], ID: parts[3],
		Protocol: parts[5], Endpoint: parts[6], Owner: parts[7], Principal: parts[8], Attributes: attrs}, nil
}

// restoreSubscription makes again, confirmed, the deleted subscription a
// restoring token carries, under its ARN. Restored already, it answers
// that ARN; if the endpoint subscribed again meanwhile, that
// subscription's, confirmed.
func (s *Service) restoreSubscription(ctx context.Context, sub *baton.Subscription, p ConfirmParams) (string, error) {
	old, err := s.store.SubscriptionGet(ctx, sub.Region, sub.Account, sub.Topic, sub.ID)
	if err == nil {
		return SubscriptionARN(old), nil
	}
	if !errors.Is(err, baton.ErrNotFound) {
		return "", storeErr(err, "get subscription")
	}
	sub.CreatedAt = s.clock.Now()
	markConfirmed(sub, p)
	err = s.store.SubscriptionCreate(ctx, sub)
	switch {
	case err == nil:
		s.log.Info("sns: subscription restored", "subscription", SubscriptionARN(sub), "endpoint", sub.Endpoint)
		return SubscriptionARN(sub), nil
	case errors.Is(err, baton.ErrNotFound):
		return "", invalidParameter("Token") // the topic is gone
	case !errors.Is(err, baton.ErrExists):
		return "", storeErr(err, "restore subscription")
	}
	t := &baton.Topic{Region: sub.Region, Account: sub.Account, Name: sub.Topic}
	old, err = s.findSubscription(ctx, t, sub.Protocol, sub.Endpoint)
	if err != nil || old == nil {
		return "", cmpErr(err, invalidParameter("Token"))
	}
	if old.Pending && !s.pendingExpired(old) {
		old.Pending = false
		markConfirmed(old, p)
		if err := s.store.SubscriptionUpdate(ctx, old); err != nil && !errors.Is(err, baton.ErrNotFound) {
			return "", storeErr(err, "confirm subscription")
		}
	}
	return SubscriptionARN(old), nil
}

// farewellTarget is an UnsubscribeConfirmation's target for the delivery
// worker: its subscription is deleted, so the job carries the endpoint;
// the topic's delivery policy applies. Nil if the topic is gone.
func (s *Service) farewellTarget(ctx context.Context, j job) (*baton.Subscription, *baton.Topic, error) {
	parts := strings.Split(j.TopicARN, ":")
	if len(parts) != 6 {
		return nil, nil, nil
	}
	t, err := s.store.TopicGet(ctx, parts[3], parts[4], parts[5])
	if errors.Is(err, baton.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &baton.Subscription{Region: t.Region, Account: t.Account, Topic: t.Name, Protocol: j.Protocol, Endpoint: j.Endpoint}, t, nil
}

// pendingExpired: sub is pending and its 48 hours are over. It is then
// deleted already as far as anyone can tell: it cannot be confirmed, and
// subscribing its endpoint again makes a new one.
func (s *Service) pendingExpired(sub *baton.Subscription) bool {
	return sub.Pending && !s.clock.Now().Before(sub.CreatedAt.Add(pendingLifetime))
}

// schedulePendingExpiry queues, durably, the job that deletes sub if it is
// still pending at its deadline. Call it before the subscription is
// stored: a job whose subscription was never made finds nothing.
func (s *Service) schedulePendingExpiry(ctx context.Context, sub *baton.Subscription) error {
	return s.enqueueAfter(ctx, job{Type: pendingExpiry, Subscription: SubscriptionARN(sub),
		TopicARN: TopicARN(sub.Region, sub.Account, sub.Topic)}, "", pendingExpiryDelay)
}

// expirePending runs a leased expiry job: it deletes its subscription if
// the subscription is still pending past its deadline, waits again (in
// the lease) if the deadline is to come, and ends once the subscription
// is confirmed or gone.
func (s *Service) expirePending(ctx context.Context, m engine.ReceivedMessage, j job) {
	sub, _, err := s.deliveryTarget(ctx, j)
	if err != nil {
		s.log.Error("sns: a pending subscription's deadline cannot be checked now; it is checked again later",
			"subscription", j.Subscription, "err", err)
		return // the lease lapses
	}
	if sub == nil || !sub.Pending {
		s.settle(ctx, m)
		return
	}
	if left := sub.CreatedAt.Add(pendingLifetime).Sub(s.clock.Now()); left > 0 {
		secs := int((min(left, longestWait) + time.Second - 1) / time.Second)
		if err := s.engine.ChangeMessageVisibility(ctx, s.deliveryQueue(), m.ReceiptHandle, &secs); err != nil {
			s.log.Error("sns: a pending subscription's deadline cannot be scheduled; it is checked when its lease lapses", "err", err)
		}
		return
	}
	err = s.store.SubscriptionDelete(ctx, sub.Region, sub.Account, sub.Topic, sub.ID)
	if err != nil && !errors.Is(err, baton.ErrNotFound) {
		s.log.Error("sns: a subscription left unconfirmed cannot be deleted now; it is tried again later",
			"subscription", j.Subscription, "err", err)
		return // the lease lapses
	}
	s.log.Info("sns: a subscription left unconfirmed for 48 hours is deleted, as AWS deletes it",
		"subscription", j.Subscription, "protocol", sub.Protocol, "endpoint", sub.Endpoint)
	s.settle(ctx, m)
}
