package pebblestore

import (
	"context"

	"github.com/baton-sqs/baton"
)

// MessageStats answers from memory, the changes not yet committed counted
// with the rest (see Store): the counts are approximate, as SQS's are, and
// a count each receive makes must not wait for a commit.
func (s *Store) MessageStats(ctx context.Context, p baton.MessageStatsParams) (baton.MessageStats, error) {
	return s.index.MessageStats(ctx, p)
}
