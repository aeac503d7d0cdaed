package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
)

// The engine feeds its lease ledger (package ledger) every event it makes
// and asks it, for a queue named on the wire, what it saw: the doctor's
// report, a message's history, the dashboard's and /metrics' figures. Its
// answers are the ledger's own types (ledger.LeaseReport and so on), one
// spelling everywhere.

// record applies an event this node made to its ledger, which relays it to
// the other nodes of a shared store.
func (e *Engine) record(ev ledger.Event) { e.ledger.Record(ev) }

// seedLedger gives the ledger the leases running in the store at now, when
// the engine starts: each queue's in-flight messages, at most
// ledger.MaxSeeds a queue, read at once from a store that lists them so
// (baton.InFlightLister), else as a browse lists them, queue by queue. The
// ledger starts empty, and without them a lease taken before a restart,
// held by a consumer that crashed, would be invisible to the doctor until
// it lapsed. A queue that cannot be read is left unseeded, and said so in
// the log.
func (e *Engine) seedLedger(ctx context.Context, now time.Time) {
	if e.inFlight != nil {
		inFlight, err := e.inFlight.MessagesInFlight(ctx, now, ledger.MaxSeeds)
		if err != nil {
			e.log.Warn("lease ledger: leases running before start not read", "err", err)
			return
		}
		for id, msgs := range inFlight {
			e.ledger.Seed(id, seedsOf(nil, msgs), now)
		}
		return
	}
	queues, err := e.store.QueueList(ctx, baton.QueueListParams{})
	if err != nil {
		e.log.Warn("lease ledger: leases running before start not read", "err", err)
		return
	}
	for _, q := range queues {
		seeds, err := e.runningLeases(ctx, q.ID, now)
		if err != nil {
			e.log.Warn("lease ledger: leases running before start not read", "queue", q.Name, "err", err)
		}
		if len(seeds) > 0 {
			e.ledger.Seed(q.ID, seeds, now)
		}
	}
}

// runningLeases lists the queue's in-flight messages at now as the
// ledger's seeds, at most ledger.MaxSeeds of them.
func (e *Engine) runningLeases(ctx context.Context, queueID uint64, now time.Time) ([]ledger.Seed, error) {
	var seeds []ledger.Seed
	p := baton.MessageBrowseParams{QueueID: queueID, Now: now, States: baton.StateInFlight}
	for {
		p.Limit = min(MaxBrowseLimit, ledger.MaxSeeds-len(seeds))
		page, err := e.store.MessageBrowse(ctx, p)
		if err != nil {
			return seeds, err
		}
		seeds = seedsOf(seeds, page.Messages)
		if page.Next == "" || len(seeds) >= ledger.MaxSeeds {
			return seeds, nil
		}
		p.Cursor = page.Next
	}
}

// seedsOf appends in-flight messages to seeds as the ledger's seeds.
func seedsOf(seeds []ledger.Seed, msgs []*baton.Message) []ledger.Seed {
	for _, m := range msgs {
		seeds = append(seeds, ledger.Seed{
			MessageID: m.ID, Epoch: m.Epoch, LeasedAt: m.LeasedAt, Deadline: m.VisibleAt,
			SentAt: m.SentAt, ReceiveCount: m.ReceiveCount,
		})
	}
	return seeds
}

// epochOf is m's lease epoch, 0 if m is nil (the message was gone).
func epochOf(m *baton.Message) uint32 {
	if m == nil {
		return 0
	}
	return m.Epoch
}

// LeaseReport diagnoses the queue's leases.
func (e *Engine) LeaseReport(ctx context.Context, ref QueueRef) (*ledger.LeaseReport, error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, err
	}
	lq := ledger.Queue{ID: q.ID, Name: q.Name, VisibilityTimeout: q.Attributes.VisibilityTimeout, FIFO: q.IsFIFO()}
	if rp, ok := parseRedrivePolicy(q.Attributes.RedrivePolicy); ok {
		lq.DeadLetterTarget, lq.MaxReceiveCount = rp.target, rp.maxReceiveCount
	}
	// The report asks for the queues that dead-letter into this one only
	// when a verdict turns on it. If the store cannot say, the report is
	// the store's error: judged as no one's dead-letter queue, a person's
	// look at what failed would read as a handler failing.
	var sourcesErr error
	lq.Sources = func() []string {
		sources, err := e.sourcesOf(ctx, q)
		if err != nil {
			sourcesErr = err
			return nil
		}
		names := make([]string, len(sources))
		for i, sq := range sources {
			names[i] = sq.Name
		}
		return names
	}
	rep := e.ledger.Report(lq, e.clock.Now())
	if sourcesErr != nil {
		return nil, storeErr(sourcesErr, "dead-letter source queues")
	}
	return rep, nil
}

// MessageHistory returns the lease events the ledger remembers for a
// message; ok is false when it remembers none.
func (e *Engine) MessageHistory(ctx context.Context, ref QueueRef, messageID string) (events []ledger.LeaseEvent, ok bool, err error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, false, err
	}
	events, ok = e.ledger.History(q.ID, messageID, e.clock.Now())
	return events, ok, nil
}

// QueueMetrics reports every queue of every account and region but
// InternalAccount's.
func (e *Engine) QueueMetrics(ctx context.Context) ([]ledger.QueueMetrics, error) {
	queues, err := e.store.QueueList(ctx, baton.QueueListParams{})
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	now := e.clock.Now()
	out := make([]ledger.QueueMetrics, 0, len(queues))
	for _, q := range queues {
		if q.Account == InternalAccount {
			continue
		}
		st, err := e.store.MessageStats(ctx, baton.MessageStatsParams{QueueID: q.ID, Now: now})
		if errors.Is(err, baton.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			// Leaving the queue out would report it gone.
			return nil, fmt.Errorf("message stats of %s: %w", q.Name, err)
		}
		m := ledger.QueueMetrics{
			Region: e.regionOr(q.Region), Account: q.Account, Name: q.Name, Visible: st.Visible, InFlight: st.InFlight, Delayed: st.Delayed,
			VisibilityTimeout: q.Attributes.VisibilityTimeout,
		}
		e.ledger.Metrics(q.ID, now, &m)
		if !st.OldestSentAt.IsZero() {
			m.OldestAge = now.Sub(st.OldestSentAt)
		}
		out = append(out, m)
	}
	return out, nil
}

// QueueActivity returns the last 15 minutes of activity, oldest first, one
// entry per minute (zero for quiet minutes).
func (e *Engine) QueueActivity(ctx context.Context, ref QueueRef) ([]ledger.MinuteActivity, error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, err
	}
	return e.ledger.Activity(q.ID, e.clock.Now()), nil
}

// ActiveLeases returns the running leases, soonest deadline first, at most
// limit of them.
func (e *Engine) ActiveLeases(ctx context.Context, ref QueueRef, limit int) ([]ledger.ActiveLease, error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, err
	}
	return e.ledger.ActiveLeases(q.ID, e.clock.Now(), limit), nil
}

// LeaseHistogram returns the 15-minute window's lease durations (receive to
// delete) counted into buckets with the given upper bounds; a last bucket
// with bound 0 holds longer leases (see ledger.Ledger.Histogram).
func (e *Engine) LeaseHistogram(ctx context.Context, ref QueueRef, bounds []time.Duration) ([]ledger.HistogramBucket, error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, err
	}
	return e.ledger.Histogram(q.ID, e.clock.Now(), bounds), nil
}

// RecentLateCompletions returns the queue's latest late completions, newest
// first.
func (e *Engine) RecentLateCompletions(ctx context.Context, ref QueueRef) ([]ledger.LateCompletion, error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, err
	}
	return e.ledger.RecentLate(q.ID), nil
}

// QueueCounts are a queue's message counts at one instant.
type QueueCounts struct {
	Visible, InFlight, Delayed int
	// OldestAge is how long the oldest message has been in the queue, zero
	// when the queue is empty.
	OldestAge time.Duration
}

// QueueCounts counts the queue's messages now, by the engine's clock.
func (e *Engine) QueueCounts(ctx context.Context, ref QueueRef) (QueueCounts, error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return QueueCounts{}, err
	}
	now := e.clock.Now()
	st, err := e.store.MessageStats(ctx, baton.MessageStatsParams{QueueID: q.ID, Now: now})
	if err != nil {
		return QueueCounts{}, storeErr(err, "message stats")
	}
	c := QueueCounts{Visible: st.Visible, InFlight: st.InFlight, Delayed: st.Delayed}
	if !st.OldestSentAt.IsZero() {
		c.OldestAge = max(now.Sub(st.OldestSentAt), 0)
	}
	return c, nil
}

// Closing is closed when Close is called: watchers of the engine, such as
// the dashboard's live streams, end then so that a server can shut down.
func (e *Engine) Closing() <-chan struct{} { return e.closing }
