package pebblestore

import (
	"context"

	"github.com/baton-sqs/baton"
)

// MessageStats answers from memory.
func (s *Store) MessageStats(ctx context.Context, p baton.MessageStatsParams) (baton.MessageStats, error) {
	return s.index.MessageStats(ctx, p)
}
