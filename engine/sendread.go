package engine

import (
	"context"

	"github.com/baton-sqs/baton"
)

// SendMessageToQueue is SendMessage to q, a queue the caller has just read
// with GetQueue, without reading it again: a caller that reads the queue
// for its own reasons (SNS checks its Policy before sending a topic's copy)
// sends with what it read. q must be as GetQueue returned it; a queue
// deleted since is refused by the store as SendMessage refuses it
// (QueueDoesNotExist).
func (e *Engine) SendMessageToQueue(ctx context.Context, q *baton.Queue, p SendParams) (*SendResult, error) {
	return e.sendOne(ctx, q, QueueRef{Region: q.Region, Account: q.Account, Name: q.Name}, p)
}
