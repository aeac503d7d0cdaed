package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-sqs/baton/internal/ids"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
)

const (
	// recreateAfter is how long a deleted queue's name stays taken.
	recreateAfter = 60 * time.Second
	// purgeInterval is the least time between two purges of one queue.
	purgeInterval = 60 * time.Second
	maxListQueues = 1000
	maxTags       = 50
)

// CreateQueueParams are the arguments of CreateQueue.
type CreateQueueParams struct {
	// Region is the queue's; empty is the default region.
	Region     string
	Account    string
	Name       string
	Attributes map[string]string
	Tags       map[string]string
}

// CreateQueue creates a queue, or returns the existing one when every
// attribute the request supplies equals the existing queue's. It returns
// QueueNameExists when one differs, and QueueDeletedRecently within 60 s of
// deleting a queue of that name.
func (e *Engine) CreateQueue(ctx context.Context, p CreateQueueParams) (*baton.Queue, error) {
	if p.Name == "" {
		return nil, baton.MissingParameter("QueueName")
	}
	// The queue is FIFO if FifoQueue says "true", in any case, and then
	// its name must end in .fifo; a standard queue's name may not (SQS
	// answers the standard name rule for "x.fifo" without FifoQueue). A
	// standard name given FifoQueue otherwise, even "false", is refused [V].
	fifoValue, fifoGiven := p.Attributes[AttrFifoQueue]
	fifo, _ := parseBool(fifoValue)
	nameFIFO := baton.IsFIFOName(p.Name)
	switch {
	case fifo && (!nameFIFO || !validQueueName(p.Name)):
		return nil, baton.Errorf(baton.ErrInvalidParameterValue,
			"The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.")
	case fifoGiven && !fifo && !nameFIFO:
		return nil, errUnknownAttribute(AttrFifoQueue)
	case !fifo && (nameFIFO || !validQueueName(p.Name)):
		return nil, baton.Errorf(baton.ErrInvalidParameterValue,
			"Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
	}
	if err := checkTags(p.Name, p.Tags); err != nil {
		return nil, err
	}
	attrs := baton.DefaultQueueAttributes()
	attrs.FifoQueue = fifo
	if fifo {
		attrs.DeduplicationScope, attrs.FifoThroughputLimit = "queue", "perQueue"
	}
	if err := applyAttributes(&attrs, p.Attributes, fifo); err != nil {
		return nil, err
	}
	if err := checkFIFOAttributes(&attrs); err != nil {
		return nil, err
	}
	region := e.regionOr(p.Region)
	if !baton.ValidRegion(region) {
		return nil, baton.Errorf(baton.ErrInvalidParameterValue, "%q is not a region.", region)
	}
	if err := e.checkRedriveTarget(ctx, QueueRef{Region: region, Account: p.Account, Name: p.Name}, &attrs); err != nil {
		return nil, err
	}

	// The queue as it stands: one another server deleted a moment ago is
	// not there to compare with (QueueDeletedRecently).
	for range 3 {
		if existing, err := e.store.QueueGet(baton.Fresh(ctx), region, p.Account, p.Name); err == nil {
			if err := sameAttributes(existing, p.Attributes); err != nil {
				return existing, err
			}
			return existing, sameTags(existing, p.Tags)
		} else if !errors.Is(err, baton.ErrNotFound) {
			return nil, fmt.Errorf("get queue: %w", err)
		}
		now := e.clock.Now()
		q := &baton.Queue{
			ID: ids.NewUint64(), Region: region, Account: p.Account, Name: p.Name, Attributes: attrs,
			Tags: p.Tags, CreatedAt: now, ModifiedAt: now, DedupScope: attrs.DeduplicationScope,
		}
		err := e.store.QueueCreate(ctx, baton.QueueCreateParams{Queue: q, DeletedCutoff: e.resets.cutoff(p.Account, now.Add(-recreateAfter))})
		switch {
		case err == nil:
			return q, nil
		case errors.Is(err, baton.ErrDeletedRecently):
			return nil, baton.Errorf(baton.ErrQueueDeletedRecently,
				"You must wait 60 seconds after deleting a queue before you can create another with the same name.")
		case errors.Is(err, baton.ErrExists):
			continue // created meanwhile: compare with it
		default:
			return nil, fmt.Errorf("create queue: %w", err)
		}
	}
	return nil, fmt.Errorf("create queue %s: kept racing with concurrent creates", p.Name)
}

// sameAttributes is nil when every supplied attribute equals the queue's.
func sameAttributes(q *baton.Queue, supplied map[string]string) error {
	names := make([]string, 0, len(supplied))
	for n := range supplied {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := q.Attributes
		if err := applyAttribute(&a, n, supplied[n], q.IsFIFO()); err != nil || a != q.Attributes {
			return baton.Errorf(baton.ErrQueueNameExists,
				"A queue already exists with the same name and a different value for attribute %s", n)
		}
	}
	return nil
}

// sameTags is nil when no tags are supplied or they are exactly the
// queue's: SQS refuses other tags for an existing queue, even one without
// tags, rather than re-tag it (dramatiq_sqs#13, amazon-sqs-java-temporary-
// queues-client#70). The message text is not known.
func sameTags(q *baton.Queue, supplied map[string]string) error {
	if len(supplied) == 0 || maps.Equal(q.Tags, supplied) {
		return nil
	}
	return baton.Errorf(baton.ErrQueueNameExists, "A queue already exists with the same name and different tags")
}

func validQueueName(name string) bool {
	base := strings.TrimSuffix(name, ".fifo")
	if len(name) > 80 || base == "" {
		return false
	}
	for i := 0; i < len(base); i++ {
		if !isNameByte(base[i]) {
			return false
		}
	}
	return true
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// checkRedriveTarget checks that a RedrivePolicy names an existing queue of
// the same type in the same account and region as the source, which SQS
// requires of a dead-letter queue. SQS lets a queue name itself.
func (e *Engine) checkRedriveTarget(ctx context.Context, source QueueRef, a *baton.QueueAttributes) error {
	if a.RedrivePolicy == "" {
		return nil
	}
	region := e.regionOr(source.Region)
	target := redriveTarget(a.RedrivePolicy)
	bad := baton.Errorf(baton.ErrInvalidParameterValue,
		"Value %s for parameter RedrivePolicy is invalid. Reason: Dead-letter target does not exist.", a.RedrivePolicy)
	arn, ok := parseARN(target)
	if !ok || arn.region != region || arn.account != source.Account {
		return bad
	}
	dlq, err := e.store.QueueGet(ctx, region, source.Account, arn.name)
	if errors.Is(err, baton.ErrNotFound) {
		return bad
	}
	if err != nil {
		return fmt.Errorf("get dead-letter queue: %w", err)
	}
	if dlq.IsFIFO() != a.FifoQueue {
		return baton.Errorf(baton.ErrInvalidParameterValue,
			"Value %s for parameter RedrivePolicy is invalid. Reason: Dead-letter queue must be same type of queue as the source.", a.RedrivePolicy)
	}
	return e.checkRedriveAllowed(dlq, RegionARN(region, source.Account, source.Name), a.RedrivePolicy)
}

// DeleteQueue deletes a queue and its messages.
func (e *Engine) DeleteQueue(ctx context.Context, ref QueueRef) error {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return err
	}
	if err := e.store.QueueDelete(ctx, q.Region, ref.Account, ref.Name, e.clock.Now()); err != nil {
		return storeErr(err, "delete queue")
	}
	e.record(ledger.Event{Kind: ledger.KindForget, QueueID: q.ID, At: e.clock.Now()})
	e.forgetQueue(q.ID)
	return nil
}

// GetQueue returns a queue or QueueDoesNotExist.
func (e *Engine) GetQueue(ctx context.Context, ref QueueRef) (*baton.Queue, error) {
	if ref.Name == "" {
		return nil, baton.MissingParameter("QueueName")
	}
	return e.queue(ctx, ref)
}

// ListQueuesParams are the arguments of ListQueues.
type ListQueuesParams struct {
	// Region is the region listed; empty is the default region.
	Region     string
	Account    string
	Prefix     string
	MaxResults *int
	NextToken  string
}

// ListQueues lists the account's queues of the region in name order. A next token is
// returned only when MaxResults was given and more queues remain.
func (e *Engine) ListQueues(ctx context.Context, p ListQueuesParams) (queues []*baton.Queue, next string, err error) {
	limit := maxListQueues
	if p.MaxResults != nil {
		if *p.MaxResults < 1 || *p.MaxResults > maxListQueues {
			return nil, "", baton.InvalidParameter("MaxResults", fmt.Sprint(*p.MaxResults),
				"MaxResults must be an integer between 1 and 1000.")
		}
		limit = *p.MaxResults
	}
	after, err := decodeToken(p.NextToken)
	if err != nil {
		return nil, "", err
	}
	qs, err := e.store.QueueList(ctx, baton.QueueListParams{Region: e.regionOr(p.Region), Account: p.Account, Prefix: p.Prefix, After: after, Limit: limit + 1})
	if err != nil {
		return nil, "", fmt.Errorf("list queues: %w", err)
	}
	if len(qs) > limit {
		qs = qs[:limit]
		if p.MaxResults != nil {
			next = encodeToken(qs[limit-1].Name)
		}
	}
	return qs, next, nil
}

// GetQueueAttributes returns the named attributes ("All" for every one).
func (e *Engine) GetQueueAttributes(ctx context.Context, ref QueueRef, names []string) (map[string]string, error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, err
	}
	return e.renderAttributes(q, names, func() (baton.MessageStats, error) {
		st, err := e.store.MessageStats(ctx, baton.MessageStatsParams{QueueID: q.ID, Now: e.clock.Now()})
		if err != nil {
			return st, storeErr(err, "message stats")
		}
		return st, nil
	})
}

// SetQueueAttributes validates and applies attributes.
func (e *Engine) SetQueueAttributes(ctx context.Context, ref QueueRef, attrs map[string]string) error {
	if len(attrs) == 0 {
		return baton.MissingParameter("Attributes")
	}
	q, err := e.queueToChange(ctx, ref)
	if err != nil {
		return err
	}
	a := q.Attributes
	if err := applyAttributes(&a, attrs, q.IsFIFO()); err != nil {
		return err
	}
	if err := checkFIFOAttributes(&a); err != nil {
		return err
	}
	if err := e.checkRedriveTarget(ctx, ref, &a); err != nil {
		return err
	}
	_, err = e.store.QueueUpdate(ctx, baton.QueueUpdateParams{
		Region: q.Region, Account: ref.Account, Name: ref.Name, Attributes: &a, ModifiedAt: e.clock.Now(),
	})
	if err != nil {
		return storeErr(err, "update queue")
	}
	return nil
}

// PurgeQueue deletes every message of the queue, at most once a minute.
// The ledger ends the leases the purge took away: gone, not lapsed.
func (e *Engine) PurgeQueue(ctx context.Context, ref QueueRef) error {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return err
	}
	now := e.clock.Now()
	err = e.store.QueuePurge(ctx, baton.QueuePurgeParams{
		Region: q.Region, Account: ref.Account, Name: ref.Name, Now: now, PurgedCutoff: now.Add(-purgeInterval),
	})
	if errors.Is(err, baton.ErrPurgedRecently) {
		return baton.Errorf(baton.ErrPurgeQueueInProgress,
			"Only one PurgeQueue operation on %s is allowed every 60 seconds.", ref.Name)
	}
	if err != nil {
		return storeErr(err, "purge queue")
	}
	e.record(ledger.Event{Kind: ledger.KindPurge, QueueID: q.ID, At: now})
	return nil
}

// TagQueue adds or overwrites tags.
func (e *Engine) TagQueue(ctx context.Context, ref QueueRef, tags map[string]string) error {
	if len(tags) == 0 {
		return baton.MissingParameter("Tags")
	}
	if err := checkTags(ref.Name, tags); err != nil {
		return err
	}
	q, err := e.queueToChange(ctx, ref)
	if err != nil {
		return err
	}
	// The store counts the tags as it writes them: two nodes tagging the
	// queue at once cannot pass maxTags together.
	_, err = e.store.QueueUpdate(ctx, baton.QueueUpdateParams{Region: q.Region, Account: ref.Account, Name: ref.Name,
		TagsSet: tags, MaxTags: maxTags})
	if errors.Is(err, baton.ErrTooManyTags) {
		return errTooManyTags(ref.Name)
	}
	return storeErrOrNil(err, "tag queue")
}

// UntagQueue removes tags; keys that are not set are ignored.
func (e *Engine) UntagQueue(ctx context.Context, ref QueueRef, keys []string) error {
	if len(keys) == 0 {
		return baton.MissingParameter("TagKeys")
	}
	q, err := e.queue(ctx, ref)
	if err != nil {
		return err
	}
	_, err = e.store.QueueUpdate(ctx, baton.QueueUpdateParams{Region: q.Region, Account: ref.Account, Name: ref.Name, TagsDelete: keys})
	return storeErrOrNil(err, "untag queue")
}

// ListQueueTags returns the queue's tags.
func (e *Engine) ListQueueTags(ctx context.Context, ref QueueRef) (map[string]string, error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, err
	}
	return q.Tags, nil
}

func storeErrOrNil(err error, what string) error {
	if err == nil {
		return nil
	}
	return storeErr(err, what)
}

// errTooManyTags refuses tags that would give queue more than maxTags, on
// CreateQueue and TagQueue alike (AWS's wording unconfirmed,
// docs/sqs-behaviour.md §2).
func errTooManyTags(queue string) error {
	return baton.Errorf(baton.ErrInvalidParameterValue, "Too many tags added for queue %s.", queue)
}

// checkTags checks the tags given for queue.
func checkTags(queue string, tags map[string]string) error {
	if len(tags) > maxTags {
		return errTooManyTags(queue)
	}
	for k, v := range tags {
		// Lengths are in characters, as SQS states them.
		switch {
		case !utf8.ValidString(k) || !utf8.ValidString(v):
			return baton.Errorf(baton.ErrInvalidParameterValue, "Tag keys and values must be valid UTF-8.")
		case !validChars(k) || !validChars(v):
			// U+0000 and other control characters: neither the Query
			// protocol's XML nor PostgreSQL's jsonb can hold them.
			return baton.Errorf(baton.ErrInvalidParameterValue, "Tag keys and values may not contain control characters.")
		case k == "" || utf8.RuneCountInString(k) > 128:
			return baton.Errorf(baton.ErrInvalidParameterValue, "Tag keys must be between 1 and 128 characters in length.")
		case utf8.RuneCountInString(v) > 256:
			return baton.Errorf(baton.ErrInvalidParameterValue, "Tag values may not be longer than 256 characters.")
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			return baton.Errorf(baton.ErrInvalidParameterValue, "Tag keys may not start with the reserved prefix aws:.")
		}
	}
	return nil
}
