package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
)

// RetentionSweeper deletes messages older than their queue's
// MessageRetentionPeriod, so that counts and storage do not keep them.
// Receives skip such messages on their own; the sweeper catches the ones no
// receive reaches.
type RetentionSweeper struct {
	engine   *Engine
	interval time.Duration

	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}
}

// NewRetentionSweeper returns a sweeper that runs every interval.
func NewRetentionSweeper(e *Engine, interval time.Duration) *RetentionSweeper {
	return &RetentionSweeper{engine: e, interval: interval}
}

// Start runs the sweeper in the background until Stop or ctx ends.
func (s *RetentionSweeper) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return
	}
	ctx, s.stop = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.run(ctx, s.done)
}

// Stop ends the sweeper and waits for it.
func (s *RetentionSweeper) Stop() {
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.stop, s.done = nil, nil
	s.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

func (s *RetentionSweeper) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		t := s.engine.clock.NewTimer(s.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if _, err := s.SweepOnce(ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.engine.log.Warn("retention sweep failed", "err", err)
		}
	}
}

// SweepOnce deletes the expired messages of every queue and returns how many
// it deleted.
func (s *RetentionSweeper) SweepOnce(ctx context.Context) (int, error) {
	queues, err := s.engine.store.QueueList(ctx, baton.QueueListParams{})
	if err != nil {
		return 0, err
	}
	now := s.engine.clock.Now()
	total := 0
	for _, q := range queues {
		cutoff := now.Add(-time.Duration(q.Attributes.MessageRetentionPeriod) * time.Second)
		n, err := s.engine.store.MessageExpire(ctx, q.ID, cutoff)
		if errors.Is(err, baton.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return total, err
		}
		if n > 0 {
			// Leased messages go too: end their leases in the ledger.
			s.engine.record(ledger.Event{Kind: ledger.KindRetention, QueueID: q.ID, At: now, SentAt: cutoff})
		}
		total += n
	}
	return total, nil
}
