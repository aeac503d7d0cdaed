package sns

import (
	"context"
	"fmt"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
)

// maxBatchEntries is how many entries a PublishBatch may carry.
const maxBatchEntries = 10

// BatchEntry is one entry of a PublishBatch: an Id and what Publish takes
// of a message.
type BatchEntry struct {
	ID                     string
	Message                string
	Subject                *string
	MessageStructure       string
	Attributes             []MessageAttribute
	MessageGroupID         *string
	MessageDeduplicationID *string
}

// BatchResult is a PublishBatch's answer: the entries published, with
// their MessageIds, and those that failed.
type BatchResult struct {
	Successful []BatchSuccess
	Failed     []BatchFailure
}

// BatchSuccess is one published entry: its MessageId, and on a FIFO topic
// its SequenceNumber.
type BatchSuccess struct{ ID, MessageID, SequenceNumber string }

// BatchFailure is one entry that failed, with its error.
type BatchFailure struct {
	ID  string
	Err *baton.Error
}

// PublishBatchParams are the arguments of PublishBatch.
type PublishBatchParams struct {
	TopicARN    string
	Entries     []BatchEntry
	TraceHeader string
	BaseURL     string
}

// PublishBatch publishes up to ten messages to a topic, in entry order,
// each as Publish does. As AWS: a batch that is empty, too long, of more
// than ten entries or of entry Ids not distinct or not well formed is
// refused whole, and so is a batch with any entry Publish would refuse
// (its text, a ValidationError naming the entry). An entry whose copies a
// store could not all take is Failed (InternalError or ServiceUnavailable,
// not the sender's fault) and its retry is the client's, and so are the
// entries after it, unsent (notPublishedAfter); the others are answered
// once their copies are durable.
func (s *Service) PublishBatch(ctx context.Context, c Caller, p PublishBatchParams) (*BatchResult, error) {
	if p.TopicARN == "" {
		return nil, missing("TopicArn")
	}
	if _, err := s.parseTopicARN(c, "TopicArn", p.TopicARN); err != nil {
		return nil, err
	}
	if err := checkBatch(p.Entries); err != nil {
		return nil, err
	}
	pubs := make([]*publication, len(p.Entries))
	for i, e := range p.Entries {
		pub := &publication{PublishParams: PublishParams{TopicARN: p.TopicARN, Message: e.Message, Subject: e.Subject,
			MessageStructure: e.MessageStructure, Attributes: e.Attributes, MessageGroupID: e.MessageGroupID,
			MessageDeduplicationID: e.MessageDeduplicationID, TraceHeader: p.TraceHeader, BaseURL: p.BaseURL},
			param: "TopicArn", arn: p.TopicARN}
		if err := pub.check(fmt.Sprintf("publishBatchRequestEntries.%d.member.messageAttributes", i+1)); err != nil {
			return nil, err
		}
		pubs[i] = pub
	}
	t, err := s.topic(ctx, c, "TopicArn", p.TopicARN)
	if err != nil {
		return nil, err
	}
	if batchSize(p.Entries) > topicMessageSize(t) {
		return nil, errBatchTooLong()
	}
	for _, pub := range pubs {
		if err := pub.checkTopicRules(t); err != nil {
			return nil, err
		}
	}
	subs, err := s.store.SubscriptionList(ctx, baton.SubscriptionListParams{Region: t.Region, Account: t.Account, Topic: t.Name})
	if err != nil {
		return nil, storeErr(err, "list subscriptions")
	}
	res := &BatchResult{}
	var stopped *baton.Error // why the entries from here on are not published
	for i, pub := range pubs {
		id := p.Entries[i].ID
		if stopped != nil {
			res.Failed = append(res.Failed, BatchFailure{ID: id, Err: stopped})
			continue
		}
		pub.id, pub.at = ids.NewUUID(), s.clock.Now()
		if err := s.deduplicated(ctx, pub, t, func() error { return s.send(ctx, pub, t, subs) }); err != nil {
			s.log.Warn("sns: a batch entry's copies were not all taken; the entry failed, and the entries after it are not published",
				"topic", p.TopicARN, "entry", id, "err", err)
			e := baton.AsError(err)
			res.Failed = append(res.Failed, BatchFailure{ID: id, Err: e})
			stopped = notPublishedAfter(id, e)
			continue
		}
		res.Successful = append(res.Successful, BatchSuccess{ID: id, MessageID: pub.id, SequenceNumber: pub.sequence})
	}
	return res, nil
}

// notPublishedAfter is the failure of the entries after entry id, which
// failed with err: they are not published, as err is not the sender's
// fault and its cause (the store) would most likely refuse them too, each
// after the store's retry bound; and a FIFO topic publishes a batch in
// entry order, so that a later entry published would reach the queues
// before the client's retry of the one that failed.
func notPublishedAfter(id string, err *baton.Error) *baton.Error {
	return baton.Errorf(err.Code, "Not published: entry %s before it failed (%s).", id, err.Message)
}

// checkBatch checks what refuses a whole batch: its count, its Ids and its
// total size, at most what any topic takes (PublishBatch holds it to its
// topic's MaximumMessageSize).
func checkBatch(entries []BatchEntry) error {
	switch {
	case len(entries) == 0:
		return baton.Errorf(baton.ErrSNSEmptyBatchRequest, "The batch request doesn't contain any entries.")
	case len(entries) > maxBatchEntries:
		return baton.Errorf(baton.ErrSNSTooManyEntriesInBatchRequest, "The batch request contains more entries than permissible.")
	}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		switch {
		case len(e.ID) > 80:
			return baton.Errorf(baton.ErrSNSInvalidBatchEntryID, "The Id of a batch entry in the batch request is too long: %s", e.ID)
		case e.ID == "" || !validBatchID(e.ID):
			return baton.Errorf(baton.ErrSNSInvalidBatchEntryID, "The Id of a batch entry in the batch request contains an impermissible character: %s", e.ID)
		case seen[e.ID]:
			return baton.Errorf(baton.ErrSNSBatchEntryIdsNotDistinct, "Two or more batch entries in the request have the same Id.")
		}
		seen[e.ID] = true
	}
	if batchSize(entries) > MaxTopicMessageSize {
		return errBatchTooLong()
	}
	return nil
}

// batchSize is what a batch counts toward its topic's MaximumMessageSize:
// each entry's message and attributes.
func batchSize(entries []BatchEntry) int {
	total := 0
	for _, e := range entries {
		total += (&publication{PublishParams: PublishParams{Message: e.Message, Attributes: e.Attributes}}).size()
	}
	return total
}

func errBatchTooLong() error {
	return baton.Errorf(baton.ErrSNSBatchRequestTooLong, "The length of all the messages put together is more than the limit.")
}

// validBatchID: alphanumerics, hyphens and underscores.
func validBatchID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
