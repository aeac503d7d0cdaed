package engine

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/baton-sqs/baton"
)

// Diagnoses of a queue's leases.
const (
	DiagnosisHealthy         = "healthy"
	DiagnosisLeaseTooShort   = "lease-too-short"
	DiagnosisHandlerFailing  = "handler-failing"
	renewAdviceSpreadFactor  = 4   // p99 above this many medians: renew rather than lengthen
	recommendedTimeoutFactor = 1.5 // recommended timeout = p99 × this
)

// LeaseStats are a queue's lease statistics over one period.
type LeaseStats struct {
	Sent, Received, Completed uint64
	P50, P90, P99, Max        time.Duration
	// UnrenewedP99 is the p99 of leases completed without a renewal, which
	// is what the visibility timeout alone must cover.
	UnrenewedP99 time.Duration
	Expired      uint64
	// Late counts late completions: deletes or visibility changes with the
	// receipt of a lease that had already lapsed.
	Late uint64
	// Duplicates counts the leases completed late after their message had
	// meanwhile been leased to another receiver: confirmed duplicate
	// executions, one per lease however many late requests its holder made.
	Duplicates uint64
	// RedeliveriesLapsedWhileWorking are redeliveries after a lapse that a
	// later late completion proved happened while the holder still worked;
	// RedeliveriesNeverReturned are the rest (an error path or a crash).
	RedeliveriesLapsedWhileWorking uint64
	RedeliveriesNeverReturned      uint64
	Renewals, Releases             uint64
	DeadLettered                   uint64
	RenewalsPerLease               float64
	// LateWorkedMax is the longest a holder is known to have worked: from
	// its receive to a late delete or visibility change by its receipt.
	// It covers holders that never deleted, which P99 does not; the doctor
	// goes by it when no lease completed.
	LateWorkedMax time.Duration
}

func statsOf(c *counters) LeaseStats {
	s := LeaseStats{
		Sent: c.sent, Received: c.received, Completed: c.completed,
		P50: c.durations.quantile(0.5), P90: c.durations.quantile(0.9), P99: c.durations.quantile(0.99), Max: c.durations.max,
		UnrenewedP99: c.unrenewed.quantile(0.99),
		Expired:      c.expired, Late: c.late, Duplicates: c.duplicates,
		RedeliveriesLapsedWhileWorking: c.lapsedWorking,
		RedeliveriesNeverReturned:      c.redeliveries - min(c.redeliveries, c.lapsedWorking),
		Renewals:                       c.renewals, Releases: c.releases, DeadLettered: c.deadLettered,
		LateWorkedMax: c.lateWorked,
	}
	if c.received > 0 {
		s.RenewalsPerLease = float64(c.renewals) / float64(c.received)
	}
	return s
}

// LeaseReport is what the queue has seen of its leases and what to do
// about it: the data of `baton doctor` and the dashboard's lease panel.
type LeaseReport struct {
	Queue             string
	VisibilityTimeout int
	// Window covers the last 15 minutes, SinceStart the life of the node
	// that answers. On a store several nodes share (a baton.LedgerBus) both
	// cover the leases of every node, as far as this node has seen them
	// since it started.
	Window     LeaseStats
	SinceStart LeaseStats
	// Diagnosis is judged on the window (on everything since start when
	// the window saw nothing).
	Diagnosis string
	// RecommendedVisibilityTimeout is p99 × 1.5 rounded up (LateWorkedMax
	// × 1.5 when no lease completed), more than the timeout in force and
	// at most 12 h, when leases are too short; otherwise the timeout in
	// force.
	RecommendedVisibilityTimeout int
	Advice                       string
}

// LeaseReport diagnoses the queue's leases.
func (e *Engine) LeaseReport(ctx context.Context, ref QueueRef) (*LeaseReport, error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, err
	}
	total, window := e.ledger.snapshot(q.ID, e.clock.Now())
	r := &LeaseReport{
		Queue: q.Name, VisibilityTimeout: q.Attributes.VisibilityTimeout,
		Window: statsOf(&window), SinceStart: statsOf(&total),
	}
	judged := r.Window
	if judged.Received == 0 && judged.Completed == 0 && judged.Late == 0 && judged.Expired == 0 {
		judged = r.SinceStart
	}
	diagnose(r, judged)
	return r, nil
}

func diagnose(r *LeaseReport, s LeaseStats) {
	vis := time.Duration(r.VisibilityTimeout) * time.Second
	r.RecommendedVisibilityTimeout = r.VisibilityTimeout
	switch {
	case s.Late > 0 || s.UnrenewedP99 > vis:
		r.Diagnosis = DiagnosisLeaseTooShort
		// With no lease completed (only late heartbeats), how long a late
		// holder was seen working is all that tells the handlers' time.
		need, seen := s.P99, "lease p99 is "+fmtSeconds(s.P99)
		if s.Completed == 0 {
			need, seen = s.LateWorkedMax, "no lease completed, but a holder was still working "+fmtSeconds(s.LateWorkedMax)+" after its receive"
		}
		rec := int(math.Ceil(need.Seconds() * recommendedTimeoutFactor))
		r.RecommendedVisibilityTimeout = min(max(rec, r.VisibilityTimeout+1), baton.MaxVisibilityTimeout)
		r.Advice = fmt.Sprintf("Handlers overran their lease: %d late completions, %d confirmed duplicate executions; "+
			"%s against a visibility timeout of %ds. Set VisibilityTimeout to %ds",
			s.Late, s.Duplicates, seen, r.VisibilityTimeout, r.RecommendedVisibilityTimeout)
		if s.P50 > 0 && s.P99 > renewAdviceSpreadFactor*s.P50 {
			r.Advice += fmt.Sprintf(", or renew the lease while working (ChangeMessageVisibility): the slowest handlers take more than %d× the median (p50 %s)",
				renewAdviceSpreadFactor, fmtSeconds(s.P50))
		}
		r.Advice += "."
	case s.Expired > 0:
		r.Diagnosis = DiagnosisHandlerFailing
		r.Advice = fmt.Sprintf("%d leases lapsed and %d messages were redelivered after their holder never came back, with no late completion: "+
			"the handlers are failing (an error path or a crash), not slow. Look at the consumers' errors; a RedrivePolicy stops a poison message from cycling.",
			s.Expired, s.RedeliveriesNeverReturned)
	default:
		r.Diagnosis = DiagnosisHealthy
		if s.Completed == 0 {
			r.Advice = "No lease has completed yet."
		} else {
			r.Advice = fmt.Sprintf("Leases end in time: p99 %s within the %ds visibility timeout, no lease lapsed.", fmtSeconds(s.P99), r.VisibilityTimeout)
		}
	}
}

func fmtSeconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// MessageHistory returns the lease events the ledger remembers for a
// message; ok is false when it remembers none.
func (e *Engine) MessageHistory(ctx context.Context, ref QueueRef, messageID string) (events []LeaseEvent, ok bool, err error) {
	q, err := e.queue(ctx, ref)
	if err != nil {
		return nil, false, err
	}
	events, ok = e.ledger.history(q.ID, messageID, e.clock.Now())
	return events, ok, nil
}

// QueueMetrics are one queue's figures for /metrics.
type QueueMetrics struct {
	Region, Account, Name      string
	Visible, InFlight, Delayed int
	OldestAge                  time.Duration
	// Totals are the ledger's counts since this node started of what this
	// node originated: the requests it handled and the expiries of the
	// leases it handed out. Other nodes' events are left out, so that
	// summing a counter over the nodes of a cluster counts each event once.
	Totals LeaseStats
	// LeaseDurations counts completed leases (receive to delete) at or
	// below each of LeaseDurationBounds, exactly; LeaseSum adds them up.
	LeaseDurations [len(LeaseDurationBounds)]uint64
	LeaseSum       time.Duration
}

// QueueMetrics reports every queue of every account and region.
func (e *Engine) QueueMetrics(ctx context.Context) ([]QueueMetrics, error) {
	queues, err := e.store.QueueList(ctx, baton.QueueListParams{})
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	now := e.clock.Now()
	out := make([]QueueMetrics, 0, len(queues))
	for _, q := range queues {
		st, err := e.store.MessageStats(ctx, baton.MessageStatsParams{QueueID: q.ID, Now: now})
		if err != nil {
			continue // deleted meanwhile
		}
		total := e.ledger.owned(q.ID, now)
		m := QueueMetrics{
			Region: e.regionOr(q.Region), Account: q.Account, Name: q.Name, Visible: st.Visible, InFlight: st.InFlight, Delayed: st.Delayed,
			Totals: statsOf(&total), LeaseDurations: total.atMost, LeaseSum: total.durationSum,
		}
		if !st.OldestSentAt.IsZero() {
			m.OldestAge = now.Sub(st.OldestSentAt)
		}
		out = append(out, m)
	}
	return out, nil
}
