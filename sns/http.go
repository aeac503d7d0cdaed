package sns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/ids"
)

// HTTP/S deliveries (docs/architecture.md §8) go through a queue of the
// engine that Baton keeps for itself, in engine.InternalAccount: a publish
// (or a subscription) is acknowledged once its delivery is durable there,
// and workers lease the deliveries, post them and delete them once the
// endpoint took them. A failed attempt sets the lease to end when the
// delivery policy's next retry is due, so the retry schedule lives in the
// store and outlives a restart, and the engine's clock times it.

const (
	// deliveryQueueName is the internal queue of HTTP/S deliveries.
	deliveryQueueName = "sns-http-deliveries"
	// deliveryWorkers bounds how many deliveries are posted at once.
	deliveryWorkers = 8
	// attemptTimeout is how long an endpoint has to answer: AWS's 15 s.
	attemptTimeout = 15 * time.Second
	// attemptLease is how long a delivery stays leased while it is tried:
	// past it, a delivery whose server stopped is tried again.
	attemptLease = 60
	// lookAgain is how often a server that has not started its workers
	// looks for the delivery queue another node of a shared store made.
	lookAgain = time.Minute
	// userAgent is the User-Agent SNS posts with.
	userAgent = "Amazon Simple Notification Service Agent"
)

// job is what a delivery says of itself, beside the body it posts: the
// first line of its message in the internal queue, as JSON; the body
// follows the newline as is.
type job struct {
	// Type is Notification, SubscriptionConfirmation or
	// UnsubscribeConfirmation, or PendingExpiry (unsubscribe.go).
	Type         string `json:"type"`
	Subscription string `json:"sub"`
	MessageID    string `json:"id"`
	TopicARN     string `json:"topic"`
	Raw          bool   `json:"raw,omitempty"`
	// Attempts were made before this message was queued (a delivery the
	// throttle put off is queued again).
	Attempts int `json:"attempts,omitempty"`
	// Attributes go with a raw notification to the dead-letter queue.
	Attributes []MessageAttribute `json:"attrs,omitempty"`
	// Endpoint and Protocol are an UnsubscribeConfirmation's, whose
	// subscription is deleted.
	Endpoint string `json:"endpoint,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	// Base64: the text after the line is the base64 of the delivery
	// (deliverytext.go).
	Base64 bool `json:"b64,omitempty"`
}

// deliveries is the state of the HTTP/S delivery workers.
type deliveries struct {
	mu      sync.Mutex
	started bool
	// closed: Close was called; no worker starts any more.
	closed bool
	// running is closed when the workers start.
	running chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	client  *http.Client
	// throttle is each throttled subscription's next free moment.
	throttle map[string]time.Time
}

func isHTTP(protocol string) bool { return protocol == "http" || protocol == "https" }

func newMessageID() string { return ids.NewUUID() }

func (s *Service) deliveryQueue() engine.QueueRef {
	return engine.QueueRef{Account: engine.InternalAccount, Name: deliveryQueueName}
}

// resumeDeliveries starts the workers once the delivery queue exists:
// made by an earlier run, so that its deliveries are delivered after a
// restart, or by another node of a shared store, so that this node takes
// its share and the deliveries outlive that node. On a shared store it
// looks every lookAgain until the workers start or the engine closes; on
// a store of one server, once (only this server makes the queue).
func (s *Service) resumeDeliveries(running <-chan struct{}) {
	_, shared := s.store.(baton.SharedStore)
	for {
		_, err := s.engine.GetQueue(context.Background(), s.deliveryQueue())
		if err == nil {
			err = s.startDeliveries(context.Background())
		}
		if err == nil {
			return
		}
		if baton.AsError(err).Code != baton.ErrQueueDoesNotExist {
			s.log.Error("sns: HTTP/S deliveries cannot resume", "err", err, "looking_again", shared)
		}
		if !shared {
			return
		}
		t := s.clock.NewTimer(lookAgain)
		select {
		case <-t.C():
		case <-running:
			t.Stop()
			return
		case <-s.engine.Closing():
			t.Stop()
			return
		}
	}
}

// startDeliveries makes the internal queue and starts the workers, once.
func (s *Service) startDeliveries(ctx context.Context) error {
	d := &s.http
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("sns: the server is stopping")
	}
	if d.started {
		return nil
	}
	_, err := s.engine.CreateQueue(ctx, engine.CreateQueueParams{Account: engine.InternalAccount, Name: deliveryQueueName,
		Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(attemptLease), "MessageRetentionPeriod": "1209600",
			"MaximumMessageSize": strconv.Itoa(baton.MaxMessageSize)}})
	if err != nil {
		return fmt.Errorf("sns: create the HTTP/S delivery queue: %w", err)
	}
	d.started = true
	close(d.running)
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.throttle = make(map[string]time.Time)
	if d.client == nil {
		d.client = &http.Client{Timeout: attemptTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	go func() {
		select {
		case <-s.engine.Closing():
			d.cancel()
		case <-d.ctx.Done():
		}
	}()
	for range deliveryWorkers {
		d.wg.Add(1)
		go s.deliveryWorker(d.ctx)
	}
	return nil
}

// Close stops the HTTP/S delivery workers and waits for them; deliveries
// not done stay queued for the next start. It says the counts of the
// queue-policy warnings held back (lograte.Paced).
func (s *Service) Close() {
	if s == nil {
		return
	}
	d := &s.http
	d.mu.Lock()
	started := d.started
	d.closed = true
	d.mu.Unlock()
	if started {
		d.cancel()
		d.wg.Wait()
	}
	s.queuePolicies.logs.Close()
}

// enqueue makes a delivery durable in the internal queue.
func (s *Service) enqueue(ctx context.Context, j job, body string) error {
	return s.enqueueAfter(ctx, j, body, 0)
}

func (s *Service) enqueueAfter(ctx context.Context, j job, body string, delay int) error {
	if err := s.startDeliveries(ctx); err != nil {
		return err
	}
	text, err := deliveryText(j, body)
	if err != nil {
		return err
	}
	_, err = s.engine.SendMessage(ctx, s.deliveryQueue(), engine.SendParams{Body: text, DelaySeconds: &delay})
	if e := (*baton.Error)(nil); errors.As(err, &e) && e.Code != baton.ErrServiceUnavailable {
		return fmt.Errorf("sns: queue an HTTP/S delivery: %s: %s", e.Code, e.Message)
	}
	return err
}

// enqueueHTTP queues a publication's notification for an HTTP/S
// subscription: the envelope (signed for the subscription's protocol) or,
// for raw delivery, the message alone.
func (s *Service) enqueueHTTP(ctx context.Context, pub *publication, sub *baton.Subscription) (Outcome, error) {
	j := job{Type: "Notification", Subscription: SubscriptionARN(sub), MessageID: pub.id,
		TopicARN: TopicARN(sub.Region, sub.Account, sub.Topic)}
	var body string
	if sub.Attributes["RawMessageDelivery"] == "true" {
		j.Raw, j.Attributes = true, pub.deliveredAttributes()
		body = pub.Message
		if pub.structure != nil {
			body = pub.structure.forProtocol(sub.Protocol)
		}
	} else {
		n, err := s.signedNotification(ctx, pub, sub)
		if err != nil {
			return Lost, err
		}
		body = string(envelope(n))
	}
	if err := s.enqueue(ctx, j, body); err != nil {
		return Lost, err
	}
	return Queued, nil
}

// deliveryWorker leases deliveries one at a time and tries them, until
// ctx ends.
func (s *Service) deliveryWorker(ctx context.Context) {
	defer s.http.wg.Done()
	wait, one, lease := 20, 1, attemptLease
	for ctx.Err() == nil {
		msgs, err := s.engine.ReceiveMessage(ctx, s.deliveryQueue(), engine.ReceiveParams{MaxNumberOfMessages: &one,
			WaitTimeSeconds: &wait, VisibilityTimeout: &lease, AttributeNames: []string{"ApproximateReceiveCount"}})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("sns: HTTP/S deliveries: cannot lease", "err", err)
				s.pause(ctx, time.Second)
			}
			continue
		}
		for _, m := range msgs {
			s.attempt(ctx, m)
		}
	}
}

// pause waits d on the engine's clock, or until ctx ends.
func (s *Service) pause(ctx context.Context, d time.Duration) {
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ctx.Done():
	}
}

// attempt tries one leased delivery and settles it: deleted once
// delivered, dead-lettered or given up; put off to its next retry
// otherwise.
func (s *Service) attempt(ctx context.Context, m engine.ReceivedMessage) {
	j, body, err := readDelivery(m.Body)
	if err != nil {
		s.log.Error("sns: an HTTP/S delivery cannot be read; it is dropped", "err", err)
		s.settle(ctx, m)
		return
	}
	if j.Type == pendingExpiry {
		s.expirePending(ctx, m, j) // unsubscribe.go
		return
	}
	received, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	n := j.Attempts + max(received, 1) // this attempt, from 1
	sub, t, err := s.deliveryTarget(ctx, j)
	if err != nil {
		s.log.Error("sns: an HTTP/S delivery cannot find its subscription now; it is tried again later",
			"subscription", j.Subscription, "message_id", j.MessageID, "err", err)
		return // the lease lapses
	}
	if sub == nil {
		s.log.Info("sns: an HTTP/S delivery's subscription is gone; nothing is delivered",
			"subscription", j.Subscription, "message_id", j.MessageID)
		s.settle(ctx, m)
		return
	}
	pol := effectivePolicy(t.Attributes["DeliveryPolicy"], sub.Attributes["DeliveryPolicy"])
	if later := s.throttled(j.Subscription, pol.maxPerSecond); later > 0 {
		j.Attempts = n - 1
		if err := s.enqueueAfter(ctx, j, body, int((later+time.Second-1)/time.Second)); err == nil {
			s.settle(ctx, m)
		}
		return
	}
	status, err := s.post(ctx, sub.Endpoint, j, body, pol.contentType)
	switch {
	case err == nil && status < 300:
		s.log.Debug("sns: delivered", "subscription", j.Subscription, "message_id", j.MessageID, "type", j.Type, "attempt", n)
		s.settle(ctx, m)
		return
	case ctx.Err() != nil:
		return // stopping: the lease lapses and the delivery is tried again
	}
	why := fmt.Sprintf("attempt %d: the endpoint answered HTTP %d", n, status)
	if err != nil {
		why = fmt.Sprintf("attempt %d: %v", n, err)
	}
	if err == nil && status < 500 || n > pol.retries {
		s.giveUp(ctx, m, j, sub, body, why)
		return
	}
	delay := pol.delay(n)
	s.log.Warn("sns: an HTTP/S delivery failed; it is retried", "subscription", j.Subscription, "message_id", j.MessageID,
		"reason", why, "retry_in", delay)
	secs := int(delay / time.Second)
	if err := s.engine.ChangeMessageVisibility(ctx, s.deliveryQueue(), m.ReceiptHandle, &secs); err != nil {
		s.log.Error("sns: an HTTP/S delivery's retry cannot be scheduled; it is tried when its lease lapses", "err", err)
	}
}

// giveUp ends a delivery that will not be delivered: a notification goes
// to the subscription's dead-letter queue (or is dropped, logged, without
// one); a confirmation is dropped, logged (Subscribe again resends a
// SubscriptionConfirmation).
func (s *Service) giveUp(ctx context.Context, m engine.ReceivedMessage, j job, sub *baton.Subscription, body, why string) {
	if j.Type != "Notification" {
		s.log.Warn("sns: a "+j.Type+" could not be delivered; it is dropped", "subscription", j.Subscription,
			"endpoint", sub.Endpoint, "reason", why)
		s.settle(ctx, m)
		return
	}
	copy := engine.SendParams{Body: body}
	if j.Raw && len(j.Attributes) > 0 {
		copy.Attributes = make(map[string]baton.MessageAttribute, len(j.Attributes))
		for _, a := range j.Attributes {
			copy.Attributes[a.Name] = a.MessageAttribute
		}
	}
	if _, err := s.undeliverable(ctx, sub, j.MessageID, copy, why); err != nil {
		s.log.Error("sns: the dead-letter queue cannot take a copy now; it is tried again later", "err", err)
		return // the lease lapses
	}
	s.settle(ctx, m)
}

// settle deletes a delivery that is done.
func (s *Service) settle(ctx context.Context, m engine.ReceivedMessage) {
	if err := s.engine.DeleteMessage(ctx, s.deliveryQueue(), m.ReceiptHandle); err != nil && ctx.Err() == nil {
		s.log.Error("sns: a finished HTTP/S delivery cannot be deleted; it may be posted again", "err", err)
	}
}

// deliveryTarget loads a delivery's subscription and topic; nil if either
// is gone.
func (s *Service) deliveryTarget(ctx context.Context, j job) (*baton.Subscription, *baton.Topic, error) {
	if j.Type == unsubscribeConfirmation {
		return s.farewellTarget(ctx, j) // unsubscribe.go
	}
	i := strings.LastIndexByte(j.Subscription, ':')
	parts := strings.Split(j.Subscription[:max(i, 0)], ":")
	if i < 0 || len(parts) != 6 {
		return nil, nil, nil
	}
	sub, err := s.store.SubscriptionGet(ctx, parts[3], parts[4], parts[5], j.Subscription[i+1:])
	if errors.Is(err, baton.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	t, err := s.store.TopicGet(ctx, parts[3], parts[4], parts[5])
	if errors.Is(err, baton.ErrNotFound) {
		return nil, nil, nil
	}
	return sub, t, err
}

// throttled takes a slot of the subscription's maxReceivesPerSecond and
// returns 0, or how long until the next free one.
func (s *Service) throttled(sub string, perSecond int) time.Duration {
	if perSecond <= 0 {
		return 0
	}
	d := &s.http
	d.mu.Lock()
	defer d.mu.Unlock()
	now := s.clock.Now()
	next := d.throttle[sub]
	if next.After(now) {
		return next.Sub(now)
	}
	d.throttle[sub] = now.Add(time.Second / time.Duration(perSecond))
	return 0
}

// post makes one attempt: a POST of the body with SNS's headers. It
// returns the status, or an error if no answer came.
func (s *Service) post(ctx context.Context, endpoint string, j job, body, contentType string) (int, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	// SNS's own headers go in lower case, as AWS sends them.
	h := req.Header
	h["x-amz-sns-message-type"] = []string{j.Type}
	h["x-amz-sns-message-id"] = []string{j.MessageID}
	h["x-amz-sns-topic-arn"] = []string{j.TopicARN}
	if j.Type != "SubscriptionConfirmation" {
		h["x-amz-sns-subscription-arn"] = []string{j.Subscription}
	}
	if j.Type != "Notification" {
		contentType = defaultContentType
	}
	if j.Raw {
		h["x-amz-sns-rawdelivery"] = []string{"true"}
	}
	h.Set("Content-Type", contentType)
	h.Set("User-Agent", userAgent)
	h.Set("Accept-Encoding", "gzip,deflate")
	resp, err := s.http.client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}
