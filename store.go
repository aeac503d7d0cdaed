package baton

import (
	"context"
	"errors"
	"maps"
	"strings"
	"time"
)

// Errors a Store returns; the engine turns them into client errors.
var (
	// ErrNotFound means the queue or message does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists means a queue of that name already exists.
	ErrExists = errors.New("already exists")
	// ErrDeletedRecently means a queue of that name was deleted after the
	// cutoff the caller gave.
	ErrDeletedRecently = errors.New("deleted recently")
	// ErrPurgedRecently means the queue was purged after the caller's cutoff.
	ErrPurgedRecently = errors.New("purged recently")
	// ErrUnavailable means the store could not do the work for now (its
	// database unreachable, failing over) and gave up retrying: the same
	// request may succeed later. Clients see ServiceUnavailable (HTTP 503).
	ErrUnavailable = errors.New("store unavailable")
	// ErrTooManyTags means a QueueUpdate would leave the queue more tags
	// than its MaxTags.
	ErrTooManyTags = errors.New("too many tags")
)

// Store persists queues and messages and selects messages for receive. It
// holds no queue semantics beyond what keeps a selection atomic: validation,
// defaults and every SQS rule live in the engine, which also passes in the
// time, so no answer of a store depends on its clock (a store may read one
// to tell how long it has kept a row it read: QueueGet). store/storetest
// is the conformance suite every implementation passes.
type Store interface {
	// A queue is named by its region, account and name together: each
	// region is a namespace of its own, as each account is, so queues of
	// one name in two regions are two queues. The store keeps the region
	// as given; the engine picks and checks it.

	// QueueCreate stores a new queue. It returns ErrExists if the name is
	// taken in the queue's region and account, and ErrDeletedRecently if a
	// queue of that region, account and name was deleted after
	// params.DeletedCutoff.
	QueueCreate(ctx context.Context, params QueueCreateParams) error
	// QueueGet returns the queue or ErrNotFound. A store shared by several
	// servers may answer with the row as it read it a moment before, so
	// that a change made through another server reaches it a moment late
	// (SQS's own changes take up to a minute to propagate), never with a
	// row older than its own last change; given a context marked by Fresh,
	// it reads the row as it stands.
	QueueGet(ctx context.Context, region, account, name string) (*Queue, error)
	// QueueList returns queues in name order (then account, then region
	// order).
	QueueList(ctx context.Context, params QueueListParams) ([]*Queue, error)
	// QueueUpdate changes a queue's attributes and tags; ErrNotFound if gone.
	QueueUpdate(ctx context.Context, params QueueUpdateParams) (*Queue, error)
	// QueueDelete removes a queue with its messages and remembers when, for
	// QueueCreate's DeletedCutoff. ErrNotFound if it does not exist.
	QueueDelete(ctx context.Context, region, account, name string, now time.Time) error
	// QueuePurge removes every message of the queue. It returns
	// ErrPurgedRecently if the queue was purged after params.PurgedCutoff.
	QueuePurge(ctx context.Context, params QueuePurgeParams) error

	// MessageSend stores new messages; they become visible at VisibleAt.
	// On a FIFO queue it gives each message the queue's next SequenceNumber
	// and stores none whose deduplication key was accepted after
	// params.DedupCutoff, reporting the original instead. When it returns,
	// the messages are as durable as the store promises.
	MessageSend(ctx context.Context, params MessageSendParams) ([]MessageSent, error)
	// MessageReceive leases up to params.Max visible messages: each one's
	// ReceiveCount and Epoch grow by one and it stays hidden until
	// params.VisibleAt. Messages sent before params.RetentionCutoff are
	// dropped instead of returned. It returns copies in receive order.
	//
	// On a standard queue without groups the earliest-sent visible
	// messages come first, as far as the store can tell cheaply: at least a
	// message whose lease ended (lapsed or released) comes before the
	// visible messages sent after it, unless many leases ended before its
	// own (PostgreSQL looks at the Max that ended first).
	//
	// Messages are chosen by group (GroupID). On a FIFO queue a group yields
	// its visible messages in send order up to its first in-flight message,
	// and a receive fills from as few groups as it can. It takes the groups
	// in the order their first receivable messages became visible (their
	// VisibleAt: the send or the end of a delay, or the end of the last
	// lease, lapsed or released), the one that has waited longest first;
	// ties go to the earlier sent (SentAt, then SequenceNumber). A group
	// whose lease ends so waits behind the groups that were visible before,
	// and a group whose head's lease keeps lapsing is not first every time,
	// as on SQS; the order is the store's, whichever server asks.
	//
	// On a standard queue with groups (a fair queue) each group in turn
	// yields one message, so a group with a large backlog cannot starve the
	// others.
	MessageReceive(ctx context.Context, params MessageReceiveParams) ([]*Message, error)
	// MessageDelete deletes a message by the lease epoch of a receipt.
	MessageDelete(ctx context.Context, params MessageDeleteParams) (LeaseOutcome, error)
	// MessageChangeVisibility moves the end of the message's current lease:
	// the receipt's, if it is live (LeaseCurrent); with params.AnyLease,
	// also a later live lease that superseded the receipt's
	// (LeaseSuperseded). Otherwise it changes nothing.
	MessageChangeVisibility(ctx context.Context, params MessageChangeVisibilityParams) (LeaseOutcome, error)
	// MessageDeleteBatch deletes messages of one queue by their receipts'
	// lease epochs, as MessageDelete would one after the other in entry
	// order, and makes them durable together: one outcome per entry, in
	// entry order. An outcome's Message, if any, carries the lease state
	// but need not carry the payload (Body, BodyMD5, Attributes,
	// TraceHeader).
	// ErrNotFound if the queue does not exist; then nothing is deleted.
	MessageDeleteBatch(ctx context.Context, params MessageDeleteBatchParams) ([]LeaseOutcome, error)
	// MessageChangeVisibilityBatch moves the ends of leases of one queue,
	// as MessageChangeVisibility would one after the other in entry order,
	// and makes them durable together: one outcome per entry, in entry
	// order, whose Message need not carry the payload. ErrNotFound if the
	// queue does not exist; then nothing changes.
	MessageChangeVisibilityBatch(ctx context.Context, params MessageChangeVisibilityBatchParams) ([]LeaseOutcome, error)
	// MessageMove moves a message to another queue (a dead-letter move or a
	// move task): it leaves params.QueueID and waits in params.ToQueueID,
	// visible at params.Now, keeping its id, body and attributes. The result
	// is LeaseGone if the message is gone, LeaseLapsed (and nothing moves) if
	// params.Epoch is set and is not the message's current lease.
	// ErrNotFound if either queue does not exist.
	MessageMove(ctx context.Context, params MessageMoveParams) (LeaseOutcome, error)
	// MessageStats counts the queue's messages at params.Now.
	MessageStats(ctx context.Context, params MessageStatsParams) (MessageStats, error)
	// MessageBrowse lists a page of the queue's messages without touching
	// them: no lease, receive count or visibility changes (see browse.go).
	// It returns ErrInvalidCursor for a cursor it did not make and
	// ErrNotFound if the queue does not exist.
	MessageBrowse(ctx context.Context, params MessageBrowseParams) (MessageBrowsePage, error)
	// MessageExpire deletes the queue's messages sent before cutoff and
	// returns how many it deleted.
	MessageExpire(ctx context.Context, queueID uint64, cutoff time.Time) (int, error)

	// MoveTaskSave stores a message move task, inserting it or replacing
	// the task of the same Handle. When it returns, the task is as durable
	// as the store promises. Each save also drops the finished tasks
	// (neither RUNNING nor CANCELLING) of the task's source that are not
	// among its MaxMoveTasksKept newest tasks (by StartedAt, then Handle):
	// no listing shows them again.
	MoveTaskSave(ctx context.Context, task MoveTask) error
	// MoveTaskList returns every stored move task, in no particular order.
	MoveTaskList(ctx context.Context) ([]MoveTask, error)

	// Close releases the store's resources.
	Close() error
}

// SharedStore is a Store that several servers share, such as the
// PostgreSQL store, so that they act as one queue: besides the Store it
// tells each server of the others' sends (Notifier), runs each move task on
// one server at a time (TaskLocker), lets one server at a time publish to a
// FIFO topic's message group (GroupLocker), keeps FIFO receive attempts for
// all of them (AttemptStore), relays the lease ledger (LedgerBus) and
// reports whether its backend answers (Pinger). engine.New looks once at its store:
// a SharedStore makes it one node of several, any other Store the only one.
// store/storetest.RunShared is the conformance suite of these capabilities,
// run over two handles on one backend.
type SharedStore interface {
	Store
	Notifier
	TaskLocker
	GroupLocker
	AttemptStore
	LedgerBus
	Pinger
}

// Notifier is the part of a SharedStore that wakes long polls across
// servers. The engine wakes its own long polls when it sends to
// a queue; a Notifier tells it when another server did, so a long poll here
// answers a send made there. The engine subscribes once, when it is created.
type Notifier interface {
	// Subscribe registers f, to be called with a queue's ID when another
	// server may have made messages receivable there (a send, a release, a
	// move) for as long as the store is open. f does not block. Calls may be
	// spurious, late or, while the store's link to the others is down, lost:
	// the engine still re-checks a waiting long poll's queue at least once a
	// second.
	Subscribe(f func(queueID uint64))
}

// QueueCreateParams are the arguments of Store.QueueCreate.
type QueueCreateParams struct {
	Queue *Queue
	// DeletedCutoff refuses the name if a queue of that name was deleted
	// after it (SQS's 60-second rule).
	DeletedCutoff time.Time
}

// QueueListParams select queues for Store.QueueList.
type QueueListParams struct {
	// Region selects one region's queues; empty selects every region's.
	Region string
	// Account selects one account's queues; empty selects every account's.
	Account string
	Prefix  string
	// After, if set, starts the list after this name.
	After string
	// Limit caps the result; 0 means no cap.
	Limit int
}

// QueueUpdateParams change a queue. Nil fields are left alone.
type QueueUpdateParams struct {
	Region     string
	Account    string
	Name       string
	Attributes *QueueAttributes
	TagsSet    map[string]string
	TagsDelete []string
	// MaxTags, if set, refuses the update with ErrTooManyTags when the
	// queue would have more tags after it: the store counts them as it
	// writes them, so that two updates at once cannot pass it together.
	MaxTags    int
	ModifiedAt time.Time
}

// Tags returns the tags of a queue whose tags were tags after the update:
// TagsSet set, then TagsDelete deleted; tags itself when the update
// changes none. It fails with ErrTooManyTags when there would be more
// than MaxTags (if set).
func (p QueueUpdateParams) Tags(tags map[string]string) (map[string]string, error) {
	if len(p.TagsSet) == 0 && len(p.TagsDelete) == 0 {
		return tags, nil
	}
	out := make(map[string]string, len(tags)+len(p.TagsSet))
	maps.Copy(out, tags)
	maps.Copy(out, p.TagsSet)
	for _, k := range p.TagsDelete {
		delete(out, k)
	}
	if p.MaxTags > 0 && len(out) > p.MaxTags {
		return nil, ErrTooManyTags
	}
	return out, nil
}

// QueuePurgeParams are the arguments of Store.QueuePurge.
type QueuePurgeParams struct {
	Region  string
	Account string
	Name    string
	Now     time.Time
	// PurgedCutoff refuses the purge if the queue was purged after it.
	PurgedCutoff time.Time
}

// MessageSendParams are the arguments of Store.MessageSend.
type MessageSendParams struct {
	QueueID  uint64
	Messages []*Message
	// DedupKeys, on a FIFO queue, are the messages' deduplication keys, one
	// per message: the MessageDeduplicationId, prefixed by the group for
	// group-scoped deduplication.
	DedupKeys []string
	// DedupCutoff: a key accepted after it makes a message a duplicate.
	DedupCutoff time.Time
}

// MessageSent is what MessageSend did with one message.
type MessageSent struct {
	// MessageID is the stored message's id, or for a duplicate the id of
	// the message first accepted under its key.
	MessageID      string
	SequenceNumber string
	Duplicate      bool
}

// MessageReceiveParams are the arguments of Store.MessageReceive.
type MessageReceiveParams struct {
	QueueID uint64
	Now     time.Time
	Max     int
	// VisibleAt is the end of the new leases; equal to Now for a receive with
	// visibility timeout 0, which leaves the messages visible.
	VisibleAt       time.Time
	RetentionCutoff time.Time
}

// MessageDeleteParams name the message and lease a receipt handle carries.
type MessageDeleteParams struct {
	QueueID   uint64
	MessageID string
	Epoch     uint32
	Now       time.Time
	// RequireLive refuses to delete unless the receipt's lease is the current
	// one and has not lapsed (FIFO queues); the outcome is then LeaseLapsed.
	RequireLive bool
}

// DeleteRemoves reports whether a delete that found the receipt's lease res
// removes the message: a current lease always does; a lapsed one does
// unless requireLive (a FIFO queue). Every store, and the engine's account
// of what a delete did, apply this one rule.
func DeleteRemoves(res LeaseResult, requireLive bool) bool {
	return res == LeaseCurrent || res == LeaseLapsed && !requireLive
}

// MessageChangeVisibilityParams are the arguments of
// Store.MessageChangeVisibility.
type MessageChangeVisibilityParams struct {
	QueueID   uint64
	MessageID string
	Epoch     uint32
	Now       time.Time
	// VisibleAt is the new end of the lease; Now releases the message.
	VisibleAt time.Time
	// AnyLease lets the receipt of an earlier lease change the message's
	// current lease while that one is live: on an SQS standard queue a
	// receipt handle of an earlier receive still addresses a message in
	// flight again. The outcome is then LeaseSuperseded. Without it such a
	// receipt changes nothing (LeaseLapsed), which the engine's own
	// changes (a replayed receive, a move task's give-back) rely on.
	AnyLease bool
}

// LeaseRef names a message and the lease epoch of a receipt for it.
type LeaseRef struct {
	MessageID string
	Epoch     uint32
}

// MessageDeleteBatchParams are the arguments of Store.MessageDeleteBatch:
// MessageDeleteParams for several messages of one queue at one instant.
type MessageDeleteBatchParams struct {
	QueueID uint64
	Now     time.Time
	// RequireLive is MessageDeleteParams.RequireLive, for every entry.
	RequireLive bool
	Entries     []LeaseRef
}

// VisibilityChange is one entry of Store.MessageChangeVisibilityBatch.
type VisibilityChange struct {
	MessageID string
	Epoch     uint32
	// VisibleAt is the new end of the lease; Now releases the message.
	VisibleAt time.Time
}

// MessageChangeVisibilityBatchParams are the arguments of
// Store.MessageChangeVisibilityBatch.
type MessageChangeVisibilityBatchParams struct {
	QueueID uint64
	Now     time.Time
	// AnyLease is MessageChangeVisibilityParams.AnyLease, for every entry.
	AnyLease bool
	// Unreceive takes back, with each change of a live lease (LeaseCurrent),
	// the receive that lease counted: its receive delivered the message to
	// nobody (a dead-letter move that failed gives it back so), and its
	// receive count is as before that receive.
	Unreceive bool
	Entries   []VisibilityChange
}

// LeaseOutcome says what a delete or visibility change found.
type LeaseOutcome struct {
	// Result is what happened.
	Result LeaseResult
	// Message is the message's state before the call (nil if it was gone).
	Message *Message
}

// LeaseResult is the result of acting on a message by a receipt's lease.
type LeaseResult int

// Lease results.
const (
	// LeaseCurrent: the receipt's lease was the current, live one; the call
	// took effect.
	LeaseCurrent LeaseResult = iota + 1
	// LeaseLapsed: the receipt's lease had ended (expired, or superseded by a
	// later receive). A delete still deleted the message unless RequireLive;
	// a visibility change did nothing.
	LeaseLapsed
	// LeaseGone: the message no longer exists.
	LeaseGone
	// LeaseSuperseded: only from a visibility change with AnyLease. The
	// receipt's lease had been superseded by a later receive whose lease
	// was live, and the change moved the end of that later lease. The
	// outcome's Message (its Epoch that of the later lease) is the state
	// before the change.
	LeaseSuperseded
)

// Changed says whether a visibility change with this result took effect.
func (r LeaseResult) Changed() bool { return r == LeaseCurrent || r == LeaseSuperseded }

// MessageMoveParams are the arguments of Store.MessageMove.
type MessageMoveParams struct {
	QueueID   uint64
	MessageID string
	// Epoch, if not zero, moves the message only while that lease is
	// current, so a move never takes a message someone else holds.
	Epoch     uint32
	ToQueueID uint64
	Now       time.Time
	// ReceiveCount is the moved message's receive count.
	ReceiveCount int
	// DeadLetterSourceARN replaces the message's: set by a dead-letter move,
	// cleared by a move task that takes it back.
	DeadLetterSourceARN string
	// ResetSentAt restarts the retention period at Now.
	ResetSentAt bool
	// ReplaceDedupID makes the message's id its deduplication id: a
	// dead-letter move from a FIFO queue does, as SQS does, so that two
	// messages that shared a deduplication id are told apart in the
	// dead-letter queue.
	ReplaceDedupID bool
	// MoveTask, if set, is the handle of the move task making the move. A
	// SharedStore adds the move to that task's Moved in the same
	// operation, so that the count survives the server that made it; other
	// stores ignore it.
	MoveTask string
}

// Moved returns m, the message before the move, as it waits in p.ToQueueID
// after it: visible at p.Now, never received there, with p's receive count,
// dead-letter source and, if p says, its new SentAt and deduplication id.
// A store that keeps messages as Go values builds the moved one with it.
func (p MessageMoveParams) Moved(m Message) Message {
	m.VisibleAt, m.Leased = p.Now, false
	m.ReceiveCount, m.DeadLetterSourceARN = p.ReceiveCount, p.DeadLetterSourceARN
	if p.ResetSentAt {
		m.SentAt = p.Now
	}
	if p.ReplaceDedupID {
		m.DedupID = m.ID
	}
	return m
}

// MessageStatsParams are the arguments of Store.MessageStats.
type MessageStatsParams struct {
	QueueID uint64
	Now     time.Time
	// Bound, if above 0, lets the store stop counting visible and delayed
	// messages at Bound: it may report min(count, Bound) or more, up to the
	// count. A receive that only asks "any visible?" passes 1, so that a
	// store which counts rows (PostgreSQL) does not read a whole backlog.
	// InFlight, NextVisibleAt and OldestSentAt are exact either way.
	Bound int
}

// MessageStats are a queue's message counts at one instant.
type MessageStats struct {
	Visible  int
	InFlight int
	Delayed  int
	// NextVisibleAt is the earliest time a hidden message becomes visible,
	// zero if none is hidden. Long polls sleep until then.
	NextVisibleAt time.Time
	// OldestSentAt is the SentAt of the oldest message, zero if none.
	OldestSentAt time.Time
}

// MaxMoveTasksKept is how many tasks of a source queue are kept: as many as
// ListMessageMoveTasks shows at most, the newest.
const MaxMoveTasksKept = 10

// MoveTask is a message move task (StartMessageMoveTask) as the engine
// reports and a Store keeps it. The engine sets every field, times
// included; a store keeps them as given.
type MoveTask struct {
	// Handle identifies the task (its TaskHandle).
	Handle         string
	SourceARN      string
	DestinationARN string // empty: each message's original source queue
	MaxPerSecond   int    // 0: not set
	// Status is RUNNING, COMPLETED, CANCELLING, CANCELLED or FAILED.
	Status        string
	Moved         int64
	ToMove        int64
	FailureReason string
	StartedAt     time.Time
}

// Finished reports whether the task has ended: COMPLETED, CANCELLED or
// FAILED.
func (t MoveTask) Finished() bool { return t.Status != "RUNNING" && t.Status != "CANCELLING" }

// CompareMoveTasks orders tasks newest first: by StartedAt, then by
// Handle; for slices.SortFunc.
func CompareMoveTasks(a, b MoveTask) int {
	if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
		return c
	}
	return strings.Compare(a.Handle, b.Handle)
}

// TaskLocker is the part of a SharedStore that runs move tasks across
// servers. Each message move task then runs on exactly one of
// them, the one holding the task's lock, and another server takes the task
// over, from its saved progress, when that one dies. The engine of a store
// without it runs the tasks it starts itself and fails those a restart cut
// short.
//
// A SharedStore also keeps what the servers agree on in the store
// itself: MoveTaskSave returns ErrExists for a RUNNING task whose source has
// another RUNNING or CANCELLING task, never replaces a COMPLETED, CANCELLED
// or FAILED task, nor turns a CANCELLING task back to RUNNING, and it never
// lowers a task's Moved; MessageMove counts a task's moves
// (MessageMoveParams.MoveTask).
type TaskLocker interface {
	// TaskLock tries, without waiting, to take the exclusive lock named key
	// among every server of the store. It returns a nil TaskLock and no
	// error if someone holds it. The lock is held until Release, or until
	// the holder's process or its link to the store dies.
	TaskLock(ctx context.Context, key string) (TaskLock, error)
}

// GroupLocker is the part of a SharedStore through which the servers take
// turns publishing to one message group of a FIFO topic, so that every
// queue subscribed gets the group's messages in one order.
type GroupLocker interface {
	// GroupLock waits for the exclusive lock named key among every server
	// of the store and returns what gives it back. It fails with an error
	// wrapping ErrUnavailable when ctx ends first or the store cannot be
	// reached. The lock is also given back when its holder's process or
	// its link to the store dies.
	GroupLock(ctx context.Context, key string) (unlock func(), err error)
}

// TaskLock is a lock taken with TaskLocker.TaskLock.
type TaskLock interface {
	// MoveTaskSave saves the task as Store.MoveTaskSave does, but through
	// the lock's own link to the store: it fails once the lock may have
	// been lost, and then the holder must stop acting on the task.
	MoveTaskSave(ctx context.Context, task MoveTask) error
	// Release gives the lock up; it is safe to call more than once.
	Release()
}

// AttemptStore is the part of a SharedStore that keeps the FIFO receives
// made with a ReceiveRequestAttemptId, so that a client retrying one
// through another server gets the same messages back. The engine of a
// store that is not shared remembers its own.
type AttemptStore interface {
	// AttemptPut records an attempt, replacing one of the same queue and
	// id, and may forget those made before p.Forget.
	AttemptPut(ctx context.Context, p Attempt) error
	// AttemptGet returns the attempt of queueID named id, if one made at or
	// after since is kept.
	AttemptGet(ctx context.Context, queueID uint64, id string, since time.Time) (Attempt, bool, error)
}

// Attempt is a FIFO receive made with a ReceiveRequestAttemptId: the leases
// it took, all at LeasedAt.
type Attempt struct {
	QueueID  uint64
	ID       string
	LeasedAt time.Time
	Leases   []LeaseRef
	// Forget, for AttemptPut, is before which older attempts may go.
	Forget time.Time
}

// Pinger is the part of a SharedStore that tells whether its backend
// answers, so that /healthz reports an unreachable database. Another store
// may have it too: the embedded store reports a disk that fails it.
type Pinger interface {
	Ping(ctx context.Context) error
}

// InFlightLister is a Store that lists the in-flight messages of every
// queue at once, in one exchange with its backend, where a browse of each
// queue is one exchange or more a queue. The engine seeds its lease ledger
// with them when it starts; a store without it is browsed queue by queue.
type InFlightLister interface {
	// MessagesInFlight returns, by queue id, the messages in flight at now
	// (StateInFlight) of every queue: at most perQueue of a queue, those
	// whose lease ends first, each without its payload (Body, BodyMD5,
	// Attributes, TraceHeader).
	MessagesInFlight(ctx context.Context, now time.Time, perQueue int) (map[uint64][]*Message, error)
}

// LedgerBus is the part of a SharedStore that carries the lease ledger's events between them,
// so that each server's lease reports cover the leases every server handed
// out, renewed and ended. A batch is opaque to the store; the engine encodes
// it, at most MaxLedgerBatch bytes, and recognises its own batches when the
// store hands them back. The engine subscribes once, when it is created.
type LedgerBus interface {
	// PublishLedger sends batches, in order, to every server subscribed on
	// the store, this one included, in one exchange with the backend where
	// it can: a busy node publishes what gathered during its last
	// exchange's round trip at once, instead of falling behind one round
	// trip per batch. It returns when the batches are handed to the
	// backend, or with the backend's error; the engine then publishes them
	// again later (each batch is numbered, so a batch that arrives twice
	// is applied once).
	PublishLedger(ctx context.Context, batches [][]byte) error
	// SubscribeLedger registers f, to be called with every batch published
	// on the store (by any server, this one included), with gap
	// LedgerNoGap, for as long as the store is open. f does not block and
	// must not keep batch. Batches may be lost while the store's link to
	// the others is down: when it goes down, f is called without a batch
	// and with gap LedgerLinkDown (a store may not tell), and once it is up
	// again, with gap LedgerLinkLost to say so, or LedgerLinkLostAlone if
	// the store then finds no other server connected.
	SubscribeLedger(f func(batch []byte, gap LedgerGap))
}

// LedgerGap is a LedgerBus's word, with each call of a subscriber, on what
// the subscriber may have missed: a call with a gap carries no batch.
type LedgerGap uint8

const (
	// LedgerNoGap: the call carries a batch published.
	LedgerNoGap LedgerGap = iota
	// LedgerLinkLost: the store's link to the other servers was down and is
	// up again; batches they published meanwhile may have been lost.
	LedgerLinkLost
	// LedgerLinkLostAlone: the link was down and is up again, and no other
	// server is connected now: only a server that published while the
	// link was down and had stopped by the time it was up again (or that
	// the store cannot tell from other clients) can have published
	// batches that were lost unseen.
	LedgerLinkLostAlone
	// LedgerLinkDown: the store's link to the other servers is down now;
	// what they publish until a call with LedgerLinkLost or
	// LedgerLinkLostAlone says it is up again may be lost.
	LedgerLinkDown
)

// MaxLedgerBatch bounds the bytes of one LedgerBus batch: base64 makes it
// 7,868 characters, under PostgreSQL's 8,000-byte NOTIFY payload limit.
const MaxLedgerBatch = 5900

// freshKey marks a context whose QueueGet must read the queue as it stands.
type freshKey struct{}

// Fresh marks ctx so that QueueGet reads the queue as it stands rather than
// as a store kept it: for a caller that writes back what it read changed
// (SetQueueAttributes writes every attribute), which must not write back a
// change another server made meanwhile undone.
func Fresh(ctx context.Context) context.Context {
	return context.WithValue(ctx, freshKey{}, true)
}

// IsFresh reports whether ctx was marked by Fresh.
func IsFresh(ctx context.Context) bool {
	v, _ := ctx.Value(freshKey{}).(bool)
	return v
}
