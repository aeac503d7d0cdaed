package sns

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/ids"
)

// PublishParams are the arguments of Publish.
type PublishParams struct {
	// TopicARN or TargetARN names the topic.
	TopicARN, TargetARN string
	// PhoneNumber (SMS): Baton sends no SMS and records the message
	// (record_payload.go).
	PhoneNumber      string
	Message          string
	Subject          *string
	MessageStructure string
	// Attributes are in request order.
	Attributes             []MessageAttribute
	MessageGroupID         *string
	MessageDeduplicationID *string
	// TraceHeader is the request's X-Amzn-Trace-Id, passed on to each
	// queue's copy as its AWSTraceHeader.
	TraceHeader string
	// BaseURL is the scheme://host the envelope's UnsubscribeURL starts
	// with: the server's, as its queue URLs.
	BaseURL string
}

// maxParallelCopies bounds how many queues one publish sends to at once.
const maxParallelCopies = 8

// Publish validates a message, sends a copy of it to every subscribed
// queue or endpoint whose filter policy it matches and returns its
// MessageId once every copy is durable in its queue (docs/architecture.md
// §8), and every HTTP/S subscription's is durable in the delivery queue. A
// copy the queue refuses for good, as AWS counts a client error (the queue
// deleted, a message its limits refuse), goes to the subscription's
// dead-letter queue, or without one is logged and dropped, and does not
// fail the publish, as on AWS. A copy the store cannot take for now fails
// the publish (InternalError or
// ServiceUnavailable): the client retries, and queues that already took
// their copy then get a second one, as SNS delivers at least once.
func (s *Service) Publish(ctx context.Context, c Caller, p PublishParams) (PublishResult, error) {
	if p.PhoneNumber != "" {
		return s.publishSMS(c, p)
	}
	pub, err := s.checkPublish(c, p)
	if err != nil {
		return PublishResult{}, err
	}
	t, err := s.topic(ctx, c, pub.param, pub.arn)
	if err != nil {
		return PublishResult{}, err
	}
	if err := pub.checkTopicRules(t); err != nil {
		return PublishResult{}, err
	}
	subs, err := s.store.SubscriptionList(ctx, baton.SubscriptionListParams{Region: t.Region, Account: t.Account, Topic: t.Name})
	if err != nil {
		return PublishResult{}, storeErr(err, "list subscriptions")
	}
	pub.id = ids.NewUUID()
	pub.at = s.clock.Now()
	if err := s.deduplicated(ctx, pub, t, func() error { return s.send(ctx, pub, t, subs) }); err != nil {
		return PublishResult{}, err
	}
	return PublishResult{MessageID: pub.id, SequenceNumber: pub.sequence}, nil
}

// PublishResult is what a publish is answered: its MessageId, and on a
// FIFO topic its SequenceNumber.
type PublishResult struct {
	MessageID, SequenceNumber string
}

// send signs the publication if a subscription gets an envelope of a
// standard topic (a FIFO topic's envelopes are not signed, as AWS's are
// not), and sends every subscription its copy.
func (s *Service) send(ctx context.Context, pub *publication, t *baton.Topic, subs []*baton.Subscription) error {
	pub.displayName = t.Attributes["DisplayName"]
	if !pub.fifo && enveloped(subs) {
		if err := s.sign(ctx, pub, t); err != nil {
			return err
		}
	}
	return s.fanOut(ctx, pub, subs)
}

// publication is a publish once checked.
type publication struct {
	PublishParams
	// param and arn are the parameter naming the topic and its value.
	param, arn string
	structure  structured
	id         string
	at         time.Time
	fifoState
	// signatureVersion, signature and certURL sign the envelopes: the
	// signature covers nothing that differs between sqs subscriptions,
	// so one serves them all.
	signatureVersion, signature, certURL string
	// displayName is the topic's DisplayName, which prefixes an SMS.
	displayName string
	// filterIn is what filter policies read of it, read once (filter_match.go).
	filterIn *filterInput
	// outcomes are what became of each subscription's copy (outcome.go).
	outcomes outcomeList
}

// sign signs the envelope the publication's sqs subscriptions receive,
// under the topic's SignatureVersion (1 unless set).
func (s *Service) sign(ctx context.Context, pub *publication, t *baton.Topic) error {
	sig, err := s.signer(ctx)
	if err != nil {
		return err
	}
	pub.signatureVersion = t.Attributes["SignatureVersion"]
	if pub.signatureVersion == "" {
		pub.signatureVersion = "1"
	}
	pub.certURL = pub.BaseURL + "/" + sig.certName
	n := pub.notification(t.Region, t.Account, t.Name, "sqs")
	pub.signature, err = sig.sign(notificationStringToSign(n), pub.signatureVersion)
	if err != nil {
		return fmt.Errorf("sns: sign: %w", err)
	}
	return nil
}

// enveloped reports whether any subscription gets a signed notification
// (an envelope, an email-json document, a Lambda event): only then is a
// publish signed.
func enveloped(subs []*baton.Subscription) bool {
	for _, sub := range subs {
		if !sub.Pending && signed(sub.Protocol) && sub.Attributes["RawMessageDelivery"] != "true" {
			return true
		}
	}
	return false
}

// signed reports whether a subscription of protocol gets signed
// notifications: email, sms and firehose get none.
func signed(protocol string) bool {
	return protocol == "sqs" || isHTTP(protocol) || protocol == "email-json" || protocol == "lambda"
}

// signedNotification is the notification a subscription gets, with its
// UnsubscribeURL, and signed for what it says: a structured message that
// says something else to the subscription's protocol than the signed one
// is signed again.
func (s *Service) signedNotification(ctx context.Context, pub *publication, sub *baton.Subscription) (notification, error) {
	n := pub.notification(sub.Region, sub.Account, sub.Topic, sub.Protocol)
	if n.Signature != "" && n.Message != pub.notification(sub.Region, sub.Account, sub.Topic, "sqs").Message {
		sig, err := s.signer(ctx)
		if err != nil {
			return n, err
		}
		if n.Signature, err = sig.sign(notificationStringToSign(n), n.SignatureVersion); err != nil {
			return n, fmt.Errorf("sns: sign: %w", err)
		}
	}
	n.UnsubscribeURL = unsubscribeURL(pub, sub)
	return n, nil
}

// unsubscribeURL is the URL that deletes sub, as its notifications give it.
func unsubscribeURL(pub *publication, sub *baton.Subscription) string {
	return pub.BaseURL + "/?Action=Unsubscribe&SubscriptionArn=" + SubscriptionARN(sub)
}

// notification is the envelope of the publication for a subscription of
// protocol to the topic, without the members of one subscription.
func (pub *publication) notification(region, account, topic, protocol string) notification {
	msg := pub.Message
	if pub.structure != nil {
		msg = pub.structure.forProtocol(protocol)
	}
	return notification{MessageID: pub.id, SequenceNumber: pub.sequence, TopicARN: TopicARN(region, account, topic), Subject: pub.Subject,
		Message: msg, Timestamp: pub.at, Attributes: pub.deliveredAttributes(),
		SignatureVersion: pub.signatureVersion, Signature: pub.signature, SigningCertURL: pub.certURL}
}

// deliveredAttributes are the message attributes a subscription gets: none
// for a JSON-structured message, as AWS's developer guide says ("Message
// attributes are sent only when the message structure is String, not
// JSON") and AWS was seen to deliver them; filter policies still read the
// attributes published.
func (pub *publication) deliveredAttributes() []MessageAttribute {
	if pub.structure != nil {
		return nil
	}
	return pub.Attributes
}

// checkPublish checks what a publish says of itself, before its topic is
// looked up.
func (s *Service) checkPublish(c Caller, p PublishParams) (*publication, error) {
	pub := &publication{PublishParams: p, param: "TopicArn", arn: p.TopicARN}
	switch {
	case p.TopicARN == "" && p.TargetARN == "":
		return nil, invalidParameter("TopicArn or TargetArn Reason: no value for required parameter")
	case p.TopicARN == "":
		pub.param, pub.arn = "TargetArn", p.TargetARN
	}
	if _, err := s.parseTopicARN(c, pub.param, pub.arn); err != nil {
		return nil, err
	}
	if err := pub.check("messageAttributes"); err != nil {
		return nil, err
	}
	return pub, nil
}

// check checks the message, its subject, attributes (attrPath names them
// in a ValidationError), size, structure and group id.
func (pub *publication) check(attrPath string) error {
	if pub.Message == "" {
		return invalidParameter("Empty message")
	}
	if err := checkSubject(pub.Subject); err != nil {
		return err
	}
	if err := checkMessageAttributes(pub.Attributes, attrPath); err != nil {
		return err
	}
	if pub.size() > MaxTopicMessageSize {
		return errTooLong() // too long for any topic; checkTopicRules holds it to its topic's
	}
	if !engine.ValidMessageChars(pub.Message) {
		return invalidParameter("Message Reason: it holds characters SNS does not take")
	}
	switch pub.MessageStructure {
	case "":
	case "json":
		st, err := parseStructure(pub.Message)
		if err != nil {
			return err
		}
		pub.structure = st
	default:
		return invalidParameter("MessageStructure")
	}
	if pub.MessageGroupID != nil && !validID(*pub.MessageGroupID) {
		return invalidParameter("MessageGroupId Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
	}
	return nil
}

// size is what the publish counts toward its topic's MaximumMessageSize: the message's
// bytes and each attribute's name, type and value.
func (pub *publication) size() int {
	n := len(pub.Message)
	for _, a := range pub.Attributes {
		n += a.size()
	}
	return n
}

// checkTopicRules checks what the topic decides: its MaximumMessageSize
// (maxsize.go), a FIFO topic's rules (fifo.go); a standard topic takes no
// deduplication id.
func (pub *publication) checkTopicRules(t *baton.Topic) error {
	if pub.size() > topicMessageSize(t) {
		return errTooLong()
	}
	if isFIFO(t) {
		return pub.checkFIFORules(t)
	}
	if pub.MessageDeduplicationID != nil {
		return invalidParameter("MessageDeduplicationId Reason: The request includes MessageDeduplicationId parameter that is not valid for this topic type")
	}
	return nil
}

// fanOut sends the publication to every confirmed sqs subscription, a few
// at a time, and returns the first error that must fail the publish. Once
// one has, it starts no more copies: the publish is answered that error
// and the client's retry sends every copy again, so the copies left
// would only be sent twice, and a store that refuses each one only
// after retrying (a database gone read-only) would keep the answer waiting
// a retry bound per few subscriptions.
func (s *Service) fanOut(ctx context.Context, pub *publication, subs []*baton.Subscription) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, maxParallelCopies)
	)
	for _, sub := range subs {
		if sub.Pending {
			continue
		}
		if !s.admits(pub, sub) {
			pub.note(filteredOut(sub, sub.Attributes["FilterPolicy"])) // filtered out by its FilterPolicy (filter_match.go)
			continue
		}
		if !delivers(sub.Protocol) {
			pub.note(s.recordCopy(ctx, pub, sub)) // email, sms, lambda...: recorded, never delivered (record_payload.go)
			continue
		}
		slots <- struct{}{}
		mu.Lock()
		stop := first
		mu.Unlock()
		if stop != nil {
			<-slots
			pub.note(failed(sub, "not sent: another copy of this publish failed ("+stop.Error()+"), and the publish is answered that error"))
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := s.deliver(ctx, pub, sub); err != nil {
				mu.Lock()
				first = cmpErr(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s.seen.record(pub, first)
	return first
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// deliver sends one subscription its copy. It returns an error only when
// the copy may yet be taken (the store failed).
func (s *Service) deliver(ctx context.Context, pub *publication, sub *baton.Subscription) error {
	o, err := s.deliverTo(ctx, pub, sub)
	if isHTTP(sub.Protocol) {
		pub.note(httpOutcome(sub, o, err))
	}
	return err
}

// deliverTo sends one subscription its copy and says what became of it:
// an HTTP/S one is queued for its endpoint (http.go); a queue's refusal is
// the subscription's client error, and the copy goes to its dead-letter
// queue (redrive.go).
func (s *Service) deliverTo(ctx context.Context, pub *publication, sub *baton.Subscription) (Outcome, error) {
	if isHTTP(sub.Protocol) {
		return s.enqueueHTTP(ctx, pub, sub)
	}
	return s.deliverToQueue(ctx, pub, sub) // sqscopy.go
}

// copyFor is what one subscription's queue is sent: the message as
// published with its delivered attributes for raw delivery, else the envelope
// without SQS attributes, as AWS sends them.
func (s *Service) copyFor(pub *publication, sub *baton.Subscription) engine.SendParams {
	msg := pub.Message
	if pub.structure != nil {
		msg = pub.structure.forProtocol(sub.Protocol)
	}
	p := engine.SendParams{TraceHeader: pub.TraceHeader}
	p.GroupID, p.DedupID = pub.queueIDs(sub)
	if sub.Attributes["RawMessageDelivery"] == "true" {
		p.Body = msg
		if attrs := pub.deliveredAttributes(); len(attrs) > 0 {
			p.Attributes = make(map[string]baton.MessageAttribute, len(attrs))
			for _, a := range attrs {
				p.Attributes[a.Name] = a.MessageAttribute
			}
		}
		return p
	}
	n := pub.notification(sub.Region, sub.Account, sub.Topic, sub.Protocol)
	n.UnsubscribeURL = unsubscribeURL(pub, sub)
	p.Body = string(envelope(n))
	return p
}
