package memstore

import (
	"sync"
	"time"

	"github.com/baton-sqs/baton"
)

// Store is an in-memory baton.Store, safe for concurrent use.
//
// Lock order: Store.mu before queueState.mu.
type Store struct {
	mu      sync.RWMutex
	queues  map[queueKey]*queueState
	byID    map[uint64]*queueState
	deleted map[queueKey]time.Time

	// tasks are the move tasks by Handle; guarded by tasksMu.
	tasksMu sync.Mutex
	tasks   map[string]baton.MoveTask

	expiredFunc func(queueID uint64, messageID string, key uint64)

	// topics are the SNS topics and subscriptions (topics.go).
	topics topicSet
}

type queueKey struct{ region, account, name string }

// New returns an empty store.
func New() *Store { return NewWithOptions(Options{}) }

// Options configure a Store for use as the index of a durable store.
type Options struct {
	// ExpiredFunc, if set, is called for every message that MessageReceive
	// or MessageExpire drops as past retention, with its key (SetKey),
	// while the queue's lock is held: a durable store built on this one
	// learns of the drops in order with its own changes. It must not call
	// back into the Store.
	ExpiredFunc func(queueID uint64, messageID string, key uint64)
}

// NewWithOptions returns an empty store configured by o.
func NewWithOptions(o Options) *Store {
	return &Store{
		queues:      make(map[queueKey]*queueState),
		byID:        make(map[uint64]*queueState),
		deleted:     make(map[queueKey]time.Time),
		tasks:       make(map[string]baton.MoveTask),
		expiredFunc: o.ExpiredFunc,
	}
}

var _ baton.Store = (*Store)(nil)

// Close does nothing: memory needs no release.
func (s *Store) Close() error { return nil }
