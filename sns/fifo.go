package sns

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

// FIFO topics (docs/architecture.md §8): a publish names its message group
// and is deduplicated within engine.DedupWindow by its deduplication id,
// given or the SHA-256 of its Message (ContentBasedDeduplication), across
// the topic or, with FifoThroughputScope MessageGroup, within its group. A
// duplicate is answered with the MessageId and SequenceNumber of the first
// and not delivered, as AWS does. The first is recorded in the topic store
// (TopicDedupPut) once its copies are all taken, so that a publish whose
// copies were not all taken is sent again whole by the client's retry:
// FIFO queues drop the copies they have, their deduplication id being the
// topic's, and standard queues may get a second copy.

// isFIFO reports whether the topic is a FIFO topic.
func isFIFO(t *baton.Topic) bool { return t.Attributes["FifoTopic"] == "true" }

// fifoOnly are the topic attributes only a FIFO topic takes.
var fifoOnly = map[string]bool{"ContentBasedDeduplication": true, "FifoThroughputScope": true}

// checkFIFOOnly refuses an attribute of FIFO topics on a standard topic.
// AWS's text for it is not known; this one says what is wrong.
func checkFIFOOnly(name string, fifo bool) error {
	if fifoOnly[name] && !fifo {
		return invalidParameter("%s Reason: %s is only for FIFO topics", name, name)
	}
	return nil
}

// fifoDefaults adds to a new FIFO topic's attributes the default of
// ContentBasedDeduplication, which AWS always shows on a FIFO topic.
func fifoDefaults(attrs map[string]string) {
	if attrs["FifoTopic"] == "true" && attrs["ContentBasedDeduplication"] == "" {
		attrs["ContentBasedDeduplication"] = "false"
	}
}

// checkFIFORules checks what a FIFO topic asks of a publish, with AWS's
// texts: a message group, and a deduplication id unless the topic derives
// it from the content.
func (pub *publication) checkFIFORules(t *baton.Topic) error {
	pub.fifo = true
	if pub.MessageGroupID == nil {
		return invalidParameter("The MessageGroupId parameter is required for FIFO topics")
	}
	switch id := pub.MessageDeduplicationID; {
	case id == nil && t.Attributes["ContentBasedDeduplication"] != "true":
		return invalidParameter("The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
	case id == nil:
		pub.dedupID = engine.ContentDedupID(pub.Message)
	case !validID(*id):
		return invalidParameter("MessageDeduplicationId Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
	default:
		pub.dedupID = *id
	}
	pub.dedupKey = pub.dedupID
	if t.Attributes["FifoThroughputScope"] == "MessageGroup" {
		pub.dedupKey = *pub.MessageGroupID + " " + pub.dedupID // a space is in neither id
	}
	return nil
}

// queueIDs are the MessageGroupId and MessageDeduplicationId of the copy a
// queue of the subscription gets: a FIFO queue gets both, so that its own
// deduplication drops a copy sent again; a standard queue gets the group
// of a standard topic's publish (for fair queues) and nothing of a FIFO
// topic's, as AWS sends them.
func (pub *publication) queueIDs(sub *baton.Subscription) (group, dedup string) {
	if pub.MessageGroupID == nil {
		return "", ""
	}
	q, _ := engine.QueueRefOfARN(sub.Endpoint)
	switch {
	case baton.IsFIFOName(q.Name):
		return *pub.MessageGroupID, pub.dedupID
	case pub.fifo:
		return "", ""
	}
	return *pub.MessageGroupID, ""
}

// deduplicated runs send, which delivers the publication, unless it is a
// duplicate: on a FIFO topic it first looks for a publish of its
// deduplication key within the window, and if there is one answers with
// its MessageId and SequenceNumber and sends nothing; else it gives the
// publication its sequence number, sends it and records it. A standard
// topic's publication is sent as it is.
func (s *Service) deduplicated(ctx context.Context, pub *publication, t *baton.Topic, send func() error) error {
	if !pub.fifo {
		return send()
	}
	// The group's turn is taken first: a publish of its key still being
	// sent on this server (a client's retry of one it gave up waiting
	// for) is recorded by the time the lookup is made.
	release, err := s.groups.hold(ctx, t, *pub.MessageGroupID)
	if err != nil {
		return err
	}
	unlock, err := s.holdAcrossServers(ctx, t, *pub.MessageGroupID)
	if err == nil {
		err = s.sendOnce(ctx, pub, t, send)
		unlock()
	}
	release(ctx, err)
	return err
}

// holdAcrossServers takes the group's lock among every server of a store
// they share (baton.GroupLocker), once this server's turn is taken: two
// servers' publishes of one group then reach every queue in one order.
// On a store no other server shares, the server's own turn is enough.
func (s *Service) holdAcrossServers(ctx context.Context, t *baton.Topic, group string) (unlock func(), err error) {
	locker, ok := s.store.(baton.GroupLocker)
	if !ok {
		return func() {}, nil
	}
	unlock, err = locker.GroupLock(ctx, groupKey(t, group))
	if err != nil {
		return nil, storeErr(err, "lock the message group")
	}
	return unlock, nil
}

// groupKey names a FIFO topic's message group.
func groupKey(t *baton.Topic, group string) string {
	return t.Region + "\x00" + t.Account + "\x00" + t.Name + "\x00" + group
}

// sendOnce is deduplicated's work in the group's turn: the lookup, and
// unless the publication is a duplicate its number, its copies and its
// record.
func (s *Service) sendOnce(ctx context.Context, pub *publication, t *baton.Topic, send func() error) error {
	cutoff := pub.at.Add(-engine.DedupWindow)
	old, err := s.store.TopicDedupGet(ctx, t.Region, t.Account, t.Name, pub.dedupKey, cutoff)
	switch {
	case err == nil:
		pub.id, pub.sequence = old.MessageID, old.SequenceNumber
		return nil
	case !errors.Is(err, baton.ErrNotFound):
		return storeErr(err, "get publish record")
	}
	if pub.sequence, err = s.nextSequence(ctx, t, pub.at); err != nil {
		return err
	}
	if err := send(); err != nil {
		return err
	}
	rec := &baton.PublishRecord{Key: pub.dedupKey, MessageID: pub.id, SequenceNumber: pub.sequence, At: pub.at}
	old, err = s.store.TopicDedupPut(ctx, t.Region, t.Account, t.Name, rec, cutoff)
	switch {
	case errors.Is(err, baton.ErrExists):
		// A publish of the same key, sent at the same time by another
		// node or in another message group, was recorded first: both
		// answer as it.
		pub.id, pub.sequence = old.MessageID, old.SequenceNumber
	case errors.Is(err, baton.ErrNotFound):
		// The topic was deleted while its copies were sent: they were
		// taken, and nothing is left to deduplicate against.
	case err != nil:
		return storeErr(err, "put publish record")
	}
	return nil
}

// nextSequence gives a FIFO publish its SequenceNumber, before its copies
// are sent: a 20-digit decimal (as AWS's are), 10^19 plus the publish
// time in Unix nanoseconds, or one above the topic's last if that is not
// above it. The store keeps the last (TopicSequenceNext), so that the
// numbers of a message group increase, as AWS's do, across the servers of
// a store they share, whose clocks differ; and across restarts as long
// as the clock moves on. It is taken in the group's turn, so that a
// number once given is below every later one of the group, even one a
// failed publish gave its copies.
func (s *Service) nextSequence(ctx context.Context, t *baton.Topic, at time.Time) (string, error) {
	n, err := s.store.TopicSequenceNext(ctx, t.Region, t.Account, t.Name, sequenceBase+uint64(max(at.UnixNano(), 0)))
	switch {
	case errors.Is(err, baton.ErrNotFound):
		return "", errTopicNotFound() // deleted since it was looked up
	case err != nil:
		return "", storeErr(err, "number the publish")
	}
	return strconv.FormatUint(n, 10), nil
}

// sequenceBase keeps every SequenceNumber 20 digits long.
const sequenceBase = 10_000_000_000_000_000_000

// groupLocks hold a FIFO topic's message group while one publish of it is
// looked up, numbered, sent and recorded: the next is looked up only once
// every queue took (or refused) this one's copy, so that each subscribed
// queue gets the group in SequenceNumber order, as AWS delivers it, and a
// retry of this one finds its record. A publish that fails (its store
// failing) fails those waiting for the group then, with its error: else
// each would wait out the store's retry bound after the one before it.
// They hold on this server; on a store several servers share, the
// publish then takes the group's lock among them too (holdAcrossServers).
type groupLocks struct {
	mu   sync.Mutex
	held map[string]*groupLock
}

// groupLock is one group's turn, taken by a send on turn; how many
// publishes hold or await it; and how many of its holds failed, the last
// with failure.
type groupLock struct {
	turn     chan struct{}
	users    int
	failures uint64
	failure  error
}

// hold waits for the group's turn, or for ctx to end, and returns what
// gives the turn back, told how the publish ended (a failure of the
// publish, not of its client leaving, fails those waiting). A hold that
// waited while a publish of the group failed fails with its error.
func (g *groupLocks) hold(ctx context.Context, t *baton.Topic, group string) (release func(ctx context.Context, err error), err error) {
	key := groupKey(t, group)
	g.mu.Lock()
	if g.held == nil {
		g.held = make(map[string]*groupLock)
	}
	l := g.held[key]
	if l == nil {
		l = &groupLock{turn: make(chan struct{}, 1)}
		g.held[key] = l
	}
	l.users++
	seen := l.failures
	g.mu.Unlock()
	// leave records a failure, then gives the turn on (if it holds it):
	// under one lock, so the next holder checks for failures only after
	// this one's is counted.
	leave := func(ctx context.Context, err error, holding bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			l.failures++
			l.failure = err
		}
		if holding {
			<-l.turn
		}
		if l.users--; l.users == 0 {
			delete(g.held, key)
		}
	}
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		leave(ctx, nil, false)
		return nil, ctx.Err()
	}
	release = func(ctx context.Context, err error) { leave(ctx, err, true) }
	g.mu.Lock()
	failed, failure := l.failures != seen, l.failure
	g.mu.Unlock()
	if failed {
		release(ctx, nil)
		return nil, fmt.Errorf("sns: a publish of the message group failed while this one waited for it: %w", failure)
	}
	return release, nil
}

// checkFIFOProtocol: a FIFO topic delivers only to SQS queues (FIFO or,
// since 2025, standard ones); another protocol AWS knows is refused with
// AWS's text.
func checkFIFOProtocol(t *baton.Topic, protocol string) error {
	if isFIFO(t) && protocols[protocol] && protocol != "sqs" {
		return invalidParameter("Invalid protocol type: %s", protocol)
	}
	return nil
}

// fifoState is what a publication of a FIFO topic carries.
type fifoState struct {
	// fifo: the topic is a FIFO topic.
	fifo bool
	// dedupID is the deduplication id, given or derived; dedupKey the
	// key it is deduplicated under (with the group, in a topic whose
	// FifoThroughputScope is MessageGroup).
	dedupID, dedupKey string
	// sequence is the publish's SequenceNumber.
	sequence string
}
