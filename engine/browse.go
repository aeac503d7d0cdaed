package engine

import (
	"context"
	"errors"
	"time"

	"github.com/baton-sqs/baton"
)

// MaxBrowseLimit bounds one page of BrowseMessages.
const MaxBrowseLimit = 1000

// maxBrowseContains bounds a browse's body substring: it can match no more
// than a whole body.
const maxBrowseContains = baton.MaxMessageSize

// BrowseParams select a page of BrowseMessages; see
// baton.MessageBrowseParams.
type BrowseParams struct {
	Newest       bool
	States       baton.MessageState
	BodyContains string
	Cursor       string
	Limit        int
}

// BrowsePage is a page of a queue's messages as they were at Now.
type BrowsePage struct {
	Now      time.Time
	Messages []*baton.Message
	// Next continues the listing; empty at its end.
	Next string
}

// BrowseMessages lists a page of the queue's messages without receiving
// them: no lease starts, no receive count grows, and the lease ledger
// records nothing, so that looking at a queue does not change it.
func (e *Engine) BrowseMessages(ctx context.Context, ref QueueRef, p BrowseParams) (BrowsePage, error) {
	if p.Limit < 1 || p.Limit > MaxBrowseLimit {
		return BrowsePage{}, baton.Errorf(baton.ErrInvalidParameterValue, "The limit must be between 1 and %d.", MaxBrowseLimit)
	}
	if p.States&^baton.AllStates != 0 {
		return BrowsePage{}, baton.Errorf(baton.ErrInvalidParameterValue, "Unknown message state.")
	}
	if len(p.BodyContains) > maxBrowseContains {
		return BrowsePage{}, baton.Errorf(baton.ErrInvalidParameterValue,
			"The body substring must be at most %d bytes long.", maxBrowseContains)
	}
	q, err := e.queue(ctx, ref)
	if err != nil {
		return BrowsePage{}, err
	}
	now := e.clock.Now()
	page, err := e.store.MessageBrowse(ctx, baton.MessageBrowseParams{
		QueueID: q.ID, Now: now, Newest: p.Newest, States: p.States, BodyContains: p.BodyContains,
		Cursor: p.Cursor, Limit: p.Limit,
	})
	if errors.Is(err, baton.ErrInvalidCursor) {
		return BrowsePage{}, baton.Errorf(baton.ErrInvalidParameterValue, "The cursor is not one this listing gave.")
	}
	if err != nil {
		return BrowsePage{}, storeErr(err, "browse messages")
	}
	return BrowsePage{Now: now, Messages: page.Messages, Next: page.Next}, nil
}
