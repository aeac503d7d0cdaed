package sns

import (
	"context"
	"errors"
	"net/url"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

// pendingConfirmation is what Subscribe answers for a subscription that
// waits for its confirmation, unless asked for the ARN.
const pendingConfirmation = "pending confirmation"

// checkHTTPEndpoint: an http or https subscription's endpoint is a URL of
// that scheme, with a host.
func checkHTTPEndpoint(protocol, endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != protocol || u.Host == "" {
		return invalidParameter("Endpoint must match the specified protocol")
	}
	return nil
}

// needsConfirmation: HTTP/S endpoints, queues of another account than
// the topic's and the endpoints pendingElsewhere names wait for a confirmation (AWS's SNS API reference,
// Subscribe).
func needsConfirmation(t *baton.Topic, protocol, endpoint string) bool {
	if isHTTP(protocol) || pendingElsewhere(t, protocol, endpoint) {
		return true
	}
	q, ok := engine.QueueRefOfARN(endpoint)
	return protocol == "sqs" && ok && q.Account != t.Account
}

// confirmToQueue sends a queue of another account its subscription's
// confirmation, durably before Subscribe answers. A queue that refuses it
// (one that does not exist) leaves the subscription pending, logged.
func (s *Service) confirmToQueue(ctx context.Context, sub *baton.Subscription, body string) error {
	q, _ := engine.QueueRefOfARN(sub.Endpoint) // checked at Subscribe
	_, err := s.engine.SendMessage(ctx, q, engine.SendParams{Body: body})
	if e := (*baton.Error)(nil); errors.As(err, &e) && e.Code != baton.ErrInternal && e.Code != baton.ErrServiceUnavailable {
		s.log.Warn("sns: a subscribed queue of another account refused its subscription confirmation; the subscription stays pending",
			"subscription", SubscriptionARN(sub), "queue", sub.Endpoint, "code", e.Code, "reason", e.Message)
		return nil
	}
	return err
}

// subscribed is Subscribe's answer once the subscription exists: its ARN
// if it is confirmed; else, once its SubscriptionConfirmation is queued
// for the endpoint (again, for a Subscribe repeated while it waits, as the
// way to have it resent), "pending confirmation" or, if asked, the ARN.
func (s *Service) subscribed(ctx context.Context, t *baton.Topic, sub *baton.Subscription, p SubscribeParams) (string, error) {
	if !sub.Pending {
		return SubscriptionARN(sub), nil
	}
	if err := s.sendConfirmation(ctx, t, sub, p.BaseURL); err != nil {
		return "", err
	}
	if p.ReturnSubscriptionARN {
		return SubscriptionARN(sub), nil
	}
	return pendingConfirmation, nil
}

// confirmationAttributes adds to a subscription's attributes whether it
// is pending and, for HTTP/S, its EffectiveDeliveryPolicy.
func (s *Service) confirmationAttributes(ctx context.Context, sub *baton.Subscription, out map[string]string) error {
	if sub.Pending {
		out["PendingConfirmation"] = "true"
		out["ConfirmationWasAuthenticated"] = "false"
	}
	if !isHTTP(sub.Protocol) {
		return nil
	}
	t, err := s.store.TopicGet(ctx, sub.Region, sub.Account, sub.Topic)
	if errors.Is(err, baton.ErrNotFound) {
		return errSubscriptionNotFound()
	}
	if err != nil {
		return storeErr(err, "get topic")
	}
	out["EffectiveDeliveryPolicy"] = effectiveSubscriptionDeliveryPolicy(
		effectivePolicy(t.Attributes["DeliveryPolicy"], sub.Attributes["DeliveryPolicy"]))
	return nil
}
