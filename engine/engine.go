package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/lograte"
)

// Config configures an Engine.
type Config struct {
	Store baton.Store
	// Clock defaults to the system clock.
	Clock clock.Clock
	// Region is the default region: that of a QueueRef, CreateQueue or
	// ListQueues call naming none, and the region in the ARNs ARN makes;
	// defaults to us-east-1. Each region is a namespace of queues of its
	// own.
	Region string
	// ReceiptKey authenticates receipt handles. Handles issued under one key
	// are rejected under another; a durable store should keep it stable.
	// Defaults to a random key.
	ReceiptKey []byte
	Logger     *slog.Logger
}

// Engine implements the SQS actions over a Store. It is safe for concurrent
// use.
type Engine struct {
	store    baton.Store
	clock    clock.Clock
	region   string
	receipts receiptCodec
	log      *slog.Logger

	waitMu  sync.Mutex
	waiters map[uint64]chan struct{}
	// full holds the queues with a long poll waiting for room under the
	// in-flight limit (waitForRoom).
	full map[uint64]bool
	// room lets receives skip counting in-flight messages (room.go).
	room roomNotes
	// nextVisible shares long polls' reads of when a hidden message
	// becomes visible (nextvisible.go).
	nextVisible nextVisibleFlights
	// giveBackLogs paces the lines of receives whose dead-letter move
	// failed (redrive_failed.go); Close says the counts it holds.
	giveBackLogs *lograte.Paced
	// takeoverLogs paces the takeover loop's line of a failed list
	// (movetask_shared.go); Close says the count it holds.
	takeoverLogs *lograte.Paced
	closing      chan struct{}
	once         sync.Once

	// shared is the store as a SharedStore, nil unless several servers
	// share it (New decides once): then long polls hear of the others'
	// sends, move tasks are locked and taken over, receive attempts and the
	// lease ledger are kept across servers.
	shared baton.SharedStore
	// pinger is the store as a baton.Pinger, if it is one: /healthz asks
	// it (StoreReady).
	pinger baton.Pinger
	// inFlight is the store as a baton.InFlightLister, if it is one: the
	// ledger's seeds are read at once (seedLedger).
	inFlight baton.InFlightLister

	tasks moveTasks
	// resets lifts the 60-second rule on names a reset freed (state.go).
	resets resetMarks
	// locker is shared as a TaskLocker, nil on a single node.
	locker baton.TaskLocker
	// attempts is shared as an AttemptStore, or on a single node the
	// engine's own.
	attempts baton.AttemptStore
	// ledger is the node's lease ledger, shared with the other nodes' on a
	// shared store.
	ledger *ledger.Ledger
	// inFlightLimit is inFlightLimit but for tests, which set it low.
	inFlightLimit int
	// started is when New made the engine: its lease ledger starts then.
	started time.Time
}

// New returns an Engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("engine: no store")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if !baton.ValidRegion(cfg.Region) {
		return nil, fmt.Errorf("engine: %q is not a region name", cfg.Region)
	}
	if len(cfg.ReceiptKey) == 0 {
		cfg.ReceiptKey = make([]byte, 32)
		if _, err := rand.Read(cfg.ReceiptKey); err != nil {
			return nil, fmt.Errorf("engine: receipt key: %w", err)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	e := &Engine{
		store:    cfg.Store,
		clock:    cfg.Clock,
		region:   cfg.Region,
		receipts: newReceiptCodec(cfg.ReceiptKey),
		log:      cfg.Logger,
		waiters:  make(map[uint64]chan struct{}),
		full:     make(map[uint64]bool),
		closing:  make(chan struct{}),

		giveBackLogs: lograte.NewPaced(cfg.Clock, giveBackLogEvery),
		takeoverLogs: lograte.NewPaced(cfg.Clock, takeoverLogEvery),

		inFlightLimit: inFlightLimit,
		started:       cfg.Clock.Now(),
	}
	// The one place the engine asks what its store can do.
	if shared, ok := cfg.Store.(baton.SharedStore); ok {
		e.shared = shared
		e.locker = shared
		e.attempts = shared
	} else {
		e.attempts = &baton.AttemptLog{}
	}
	e.pinger, _ = cfg.Store.(baton.Pinger)
	e.inFlight, _ = cfg.Store.(baton.InFlightLister)
	lc := ledger.Config{Clock: cfg.Clock, Started: e.started, Logger: cfg.Logger}
	if e.shared != nil {
		lc.Bus = e.shared
	}
	e.ledger = ledger.New(lc)
	if err := e.loadMoveTasks(context.Background()); err != nil {
		e.ledger.Close()
		return nil, err
	}
	e.seedLedger(context.Background(), e.started)
	e.subscribeStore()
	return e, nil
}

// Close answers every waiting long poll (with what is available, usually
// nothing; the store's error to one whose last look failed), makes new
// long polls return at once and stops running move
// tasks: they end FAILED, unless several servers share the store
// (baton.SharedStore), when they are left RUNNING for another to take over.
// It publishes the lease-ledger events not yet sent to the other nodes. It
// does not close the store.
func (e *Engine) Close() {
	e.once.Do(func() { close(e.closing) })
	e.tasks.wg.Wait()
	e.giveBackLogs.Close()
	e.takeoverLogs.Close()
	e.ledger.Close()
}

// StoreReady returns the readiness check of a store that has one (a
// baton.Pinger: a shared store's backend can be unreachable, the embedded
// store's disk full), or nil.
func (e *Engine) StoreReady() func(context.Context) error {
	if e.pinger == nil {
		return nil
	}
	return e.pinger.Ping
}

// Clock returns the engine's clock.
func (e *Engine) Clock() clock.Clock { return e.clock }

// Region returns the default region.
func (e *Engine) Region() string { return e.region }

// InternalAccount is the account of the queues Baton keeps for its own
// work (SNS's HTTP/S deliveries, docs/architecture.md §8). No client can
// name it, as it is not twelve digits; QueueMetrics leaves its queues out,
// and every other listing is of one client account.
const InternalAccount = "baton"

// QueueRef names a queue on the wire: its region, account and name. An
// empty Region is the engine's default region.
type QueueRef struct {
	Region  string
	Account string
	Name    string
}

// regionOr returns region, or the default region if it is empty.
func (e *Engine) regionOr(region string) string {
	if region == "" {
		return e.region
	}
	return region
}

// ARN returns the ARN of the queue account/name in the default region.
func (e *Engine) ARN(account, name string) string {
	return RegionARN(e.region, account, name)
}

// QueueARN returns q's ARN, in its region.
func (e *Engine) QueueARN(q *baton.Queue) string {
	return RegionARN(e.regionOr(q.Region), q.Account, q.Name)
}

// RegionARN returns the ARN of the queue account/name in region:
// arn:aws:sqs:<region>:<account>:<name>.
func RegionARN(region, account, name string) string {
	return "arn:aws:sqs:" + region + ":" + account + ":" + name
}

// queue loads a queue, mapping a missing one to QueueDoesNotExist. A queue
// of another region than ref's does not exist for it.
func (e *Engine) queue(ctx context.Context, ref QueueRef) (*baton.Queue, error) {
	q, err := e.store.QueueGet(ctx, e.regionOr(ref.Region), ref.Account, ref.Name)
	if errors.Is(err, baton.ErrNotFound) {
		return nil, errQueueDoesNotExist()
	}
	if err != nil {
		return nil, fmt.Errorf("get queue %s: %w", ref.Name, err)
	}
	return q, nil
}

// queueToChange loads a queue as it stands, for an action that writes
// back what it read changed (every attribute, or the tags counted): a
// store may answer QueueGet with a row another server has changed since
// (baton.Fresh), whose old values the write would restore.
func (e *Engine) queueToChange(ctx context.Context, ref QueueRef) (*baton.Queue, error) {
	return e.queue(baton.Fresh(ctx), ref)
}

func errQueueDoesNotExist() *baton.Error {
	return baton.Errorf(baton.ErrQueueDoesNotExist, "The specified queue does not exist.")
}

// storeErr maps a store failure on an existing queue to the client's view.
func storeErr(err error, what string) error {
	if errors.Is(err, baton.ErrNotFound) {
		return errQueueDoesNotExist()
	}
	return fmt.Errorf("%s: %w", what, err)
}

func epochMillis(t time.Time) string { return fmt.Sprint(t.UnixMilli()) }
