package server

import (
	"context"
	"sync"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

// DefaultMaxLongPollsPerClient is how many ReceiveMessage calls one client
// may have waiting at once unless configured otherwise: far more than a
// worker fleet on one host needs, few enough that one client cannot pin the
// server's goroutines and connections.
const DefaultMaxLongPollsPerClient = 100

// pollLimiter counts the long polls waiting per client (pollClient).
type pollLimiter struct {
	max int // < 0: no bound
	mu  sync.Mutex
	n   map[string]int
}

func newPollLimiter(max int) *pollLimiter {
	return &pollLimiter{max: max, n: map[string]int{}}
}

func (l *pollLimiter) acquire(client string) bool {
	if l.max < 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[client] >= l.max {
		return false
	}
	l.n[client]++
	return true
}

func (l *pollLimiter) release(client string) {
	if l.max < 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[client]--; l.n[client] <= 0 {
		delete(l.n, client)
	}
}

// pollClient names the client whose long-poll slots a receive takes: the
// access key it is signed with, so that behind a load balancer, where every
// connection comes from the balancer's address, each key has its own
// slots; an unsigned request's account at its address (clientAddr: the
// forwarded one from a trusted proxy).
func pollClient(ctx context.Context, ref engine.QueueRef) string {
	req := requestFrom(ctx)
	if req.accessKey != "" {
		return "access key " + req.accessKey
	}
	return "account " + ref.Account + " at " + req.client
}

// holdPollSlot takes one of the client's long-poll slots for a receive that
// may wait (WaitTimeSeconds absent or above 0) and returns its release.
// Over the bound it answers RequestThrottled (403) at once: the error is
// modeled for ReceiveMessage, and aws-sdk-go-v2 and botocore count it as
// throttling and retry with back-off, so an over-eager client slows down
// instead of turning its polls into a busy loop of short polls. A receive
// without WaitTimeSeconds on a queue whose default wait is 0 is a short poll
// and needs no slot.
func (s *Server) holdPollSlot(ctx context.Context, ref engine.QueueRef, wait *int) (func(), error) {
	if wait != nil && *wait <= 0 {
		return func() {}, nil
	}
	client := pollClient(ctx, ref)
	if s.polls.acquire(client) {
		return func() { s.polls.release(client) }, nil
	}
	if wait == nil {
		if q, err := s.engine.GetQueue(ctx, ref); err != nil || q.Attributes.ReceiveMessageWaitTimeSeconds == 0 {
			return func() {}, nil // a short poll, or an error ReceiveMessage will report
		}
	}
	return nil, baton.Errorf(baton.ErrRequestThrottled,
		"Too many long polls from %s are waiting (at most %d at once); retry later or use fewer concurrent receivers.", client, s.polls.max)
}
