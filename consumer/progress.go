package consumer

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/baton-sqs/baton"
)

// The consumer tells Baton which of its renewals follow the handler's
// progress: a ChangeMessageVisibilityBatch that renews only leases whose
// attempt reported progress within the stall timeout carries the header
// X-Baton-Renewal: progress, so that the server's lease doctor reads a
// long-held lease as a long job at work, not perhaps a hung handler behind
// a heartbeat. SQS ignores the header.

// renewalGroup is the leases of one renewal call and its options.
type renewalGroup struct {
	leases []*Lease
	secs   []int32
	opts   []func(*sqs.Options)
}

// byProgress splits leases due for renewal at now into those renewed on
// their attempt's progress, whose call says so, and the others.
func byProgress(ls []*Lease, secs []int32, now time.Time) []renewalGroup {
	var on, off renewalGroup
	on.opts = []func(*sqs.Options){func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue(baton.RenewalHeader, baton.RenewalProgress))
	}}
	for i, l := range ls {
		g := &off
		if a := l.attempt(); a != nil && a.progressing(now) {
			g = &on
		}
		g.leases, g.secs = append(g.leases, l), append(g.secs, secs[i])
	}
	var out []renewalGroup
	for _, g := range []renewalGroup{on, off} {
		if len(g.leases) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// progressing says the handler reported its work's progress (Progress or
// Extend, not KeepAlive) within the stall timeout before now: a renewal now
// follows its progress.
func (a *attempt) progressing(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.lastWork.IsZero() && now.Before(a.lastWork.Add(a.c.cfg.stallTimeout))
}
