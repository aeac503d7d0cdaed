package proxy

import (
	"net/http"
	"sort"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/server/dashboard"
)

// The proxy serves the web dashboard's lease panels (server/dashboard in
// its leases-only mode) from its ledger, with the views they read in the
// server's JSON, live as the server's:
//
//	GET /, /ui/queues/{name}, /ui/queues/{name}/messages/{id}   the pages
//	GET /admin/api/[events/]queues/{name}                       the queue's lease panels
//	GET /admin/api/[events/]queues/{name}/messages/{id}         a message's lease timeline
//
// A queue's page has no message counts or attributes but the visibility
// timeout, and no actions: the proxy does not hold the queue.

func (p *Proxy) dashboardHandler() http.Handler {
	return dashboard.HandlerWith(dashboard.Options{LeasesOnly: true, Note: BypassNote, Queues: p.queueNames})
}

// queueNames lists the queues the proxy has seen, in name order.
func (p *Proxy) queueNames() []string {
	p.mu.Lock()
	names := make([]string, 0, len(p.byName))
	for name := range p.byName {
		names = append(names, name)
	}
	p.mu.Unlock()
	sort.Strings(names)
	return names
}

// viewQueue is the queue page's view: what the ledger knows of the queue.
func (p *Proxy) viewQueue(r *http.Request) (any, error) {
	q, err := p.lookupQueue(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	vt, rep := p.report(r.Context(), q)
	if why := p.upstreamDownNow(r.Context()); why != "" { // outage.go
		return nil, baton.Errorf(baton.ErrServiceUnavailable, "%s", why)
	}
	now := p.clock.Now().UTC()
	bounds := server.HistogramBounds(vt)
	return server.QueueDetailJSON{
		Now: now,
		Queue: server.QueueSummaryJSON{
			Name: q.name, FIFO: q.fifo, VisibilityTimeoutSeconds: vt, Diagnosis: rep.Diagnosis,
			DeadLetterSources: []string{}, Activity: server.ActivityToJSON(p.ledger.Activity(q.id, now)),
		},
		Attributes:      map[string]string{},
		LeaseReport:     p.reportJSON(rep),
		Leases:          server.ActiveLeasesToJSON(now, p.ledger.ActiveLeases(q.id, now, maxLeasesShown)),
		Histogram:       server.HistogramToJSON(now, vt, bounds, p.ledger.Histogram(q.id, now, bounds)),
		LateCompletions: server.LateCompletionsToJSON(now, p.ledger.RecentLate(q.id)).LateCompletions,
		MoveTasks:       []server.MoveTaskJSON{},
	}, nil
}

// maxLeasesShown bounds the running leases a view lists, as the server's.
const maxLeasesShown = 50

// viewMessage is the message page's view: its lease events.
func (p *Proxy) viewMessage(r *http.Request) (any, error) {
	q, err := p.lookupQueue(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	vt := max(p.visibilityTimeout(r.Context(), q), 0)
	id := r.PathValue("id")
	events, ok := p.ledger.History(q.id, id, p.clock.Now())
	return server.MessageViewJSON{
		Now: p.clock.Now().UTC(), Queue: q.name, MessageID: id, VisibilityTimeoutSeconds: vt,
		Found: ok, Events: server.LeaseEventsToJSON(events),
	}, nil
}

// serveView answers a GET with a view's JSON.
func serveView(view func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := view(r)
		if err != nil {
			viewError(w, err)
			return
		}
		writeJSON(w, v)
	}
}
