package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// The views the dashboard reads, each one JSON document served both by a
// GET and, pushed again whenever it changes, by a server-sent event stream
// under /admin/api/events/ (see admin_stream.go). Every view carries "now",
// the engine clock's time, so that countdowns and timelines are drawn on the
// queue's own clock (a test's fake clock included), never the browser's.
//
//	GET /admin/api/queues                               every queue: counts, oldest age, diagnosis, activity
//	GET /admin/api/queues/{name}                        one queue: all of the above and its attributes, leases, histogram …
//	GET /admin/api/queues/{name}/active-leases          the leases running now, soonest deadline first
//	GET /admin/api/queues/{name}/histogram              lease durations over 15 minutes, against the visibility timeout
//	GET /admin/api/queues/{name}/activity               sends, receives, deletes, expiries, late completions per minute
//	GET /admin/api/queues/{name}/late-completions       the latest late deletes and visibility changes
//	GET /admin/api/queues/{name}/move-tasks             the queue's message move tasks (redrives), newest first
//	GET /admin/api/queues/{name}/messages/{id}          one message's lease history with the queue's timeout

// maxLeasesShown bounds the active leases a view lists.
const maxLeasesShown = 50

// MinuteActivityJSON is a queue's activity during one minute.
type MinuteActivityJSON struct {
	Minute   time.Time `json:"minute"`
	Sent     uint64    `json:"sent"`
	Received uint64    `json:"received"`
	Deleted  uint64    `json:"deleted"`
	Expired  uint64    `json:"expired"`
	Late     uint64    `json:"late"`
}

// ActivityJSON is the last 15 minutes of a queue's activity, oldest first.
type ActivityJSON struct {
	Now     time.Time            `json:"now"`
	Minutes []MinuteActivityJSON `json:"minutes"`
}

// QueueSummaryJSON is one queue as the queues page lists it.
type QueueSummaryJSON struct {
	Name                     string  `json:"name"`
	Region                   string  `json:"region"`
	ARN                      string  `json:"arn"`
	FIFO                     bool    `json:"fifo"`
	Visible                  int     `json:"visible"`
	InFlight                 int     `json:"in_flight"`
	Delayed                  int     `json:"delayed"`
	OldestAgeSeconds         float64 `json:"oldest_age_seconds"`
	VisibilityTimeoutSeconds int     `json:"visibility_timeout_seconds"`
	// Diagnosis is the lease doctor's verdict (engine.Diagnosis*).
	Diagnosis string `json:"diagnosis"`
	// DeadLetterQueue and MaxReceiveCount are the queue's RedrivePolicy.
	DeadLetterQueue string `json:"dead_letter_queue,omitempty"`
	MaxReceiveCount int    `json:"max_receive_count,omitempty"`
	// DeadLetterSources are the queues that use this one as their
	// dead-letter queue.
	DeadLetterSources []string             `json:"dead_letter_sources"`
	Activity          []MinuteActivityJSON `json:"activity"`
}

// QueueListJSON lists the account's queues in name order.
type QueueListJSON struct {
	Now    time.Time          `json:"now"`
	Queues []QueueSummaryJSON `json:"queues"`
}

// ActiveLeaseJSON is a lease running now.
type ActiveLeaseJSON struct {
	MessageID string    `json:"message_id"`
	Epoch     uint32    `json:"lease"`
	Begin     time.Time `json:"begin"`
	Deadline  time.Time `json:"deadline"`
	Renewals  int       `json:"renewals"`
	Receiver  string    `json:"receiver,omitempty"`
	UserAgent string    `json:"user_agent,omitempty"`
	// BeforeStart: the lease was running when the server started; its
	// holder is not known, and Renewals counts only those made since.
	BeforeStart bool `json:"leased_before_start,omitempty"`
}

// ActiveLeasesJSON lists running leases, soonest deadline first, at most
// 50 of them.
type ActiveLeasesJSON struct {
	Now    time.Time         `json:"now"`
	Leases []ActiveLeaseJSON `json:"leases"`
}

// HistogramBucketJSON counts completed leases that lasted more than
// GreaterThan and at most AtMost seconds (no upper bound when AtMost is
// null).
type HistogramBucketJSON struct {
	GreaterThan float64  `json:"gt_seconds"`
	AtMost      *float64 `json:"le_seconds"`
	Count       uint64   `json:"count"`
}

// HistogramJSON is the distribution of lease durations (receive to delete)
// over the last 15 minutes. Its bucket bounds are fractions and multiples of
// the visibility timeout, which is always one of them, so the timeout falls
// on a bucket edge.
type HistogramJSON struct {
	Now                      time.Time             `json:"now"`
	VisibilityTimeoutSeconds int                   `json:"visibility_timeout_seconds"`
	WindowMinutes            int                   `json:"window_minutes"`
	Buckets                  []HistogramBucketJSON `json:"buckets"`
}

// LateCompletionJSON is a delete or visibility change that came with the
// receipt of a lease that had already lapsed.
type LateCompletionJSON struct {
	MessageID   string    `json:"message_id"`
	At          time.Time `json:"at"`
	Kind        string    `json:"kind"`
	Epoch       uint32    `json:"lease"`
	LateSeconds float64   `json:"late_seconds"`
	Duplicate   bool      `json:"duplicate"`
	// Refused and AlreadyDeleted mark a late delete that deleted nothing,
	// as LeaseEventJSON's do.
	Refused        bool   `json:"refused,omitempty"`
	AlreadyDeleted bool   `json:"already_deleted,omitempty"`
	Receiver       string `json:"receiver,omitempty"`
	UserAgent      string `json:"user_agent,omitempty"`
}

// LateCompletionsJSON lists late completions, newest first.
type LateCompletionsJSON struct {
	Now             time.Time            `json:"now"`
	LateCompletions []LateCompletionJSON `json:"late_completions"`
}

// MoveTaskJSON is a message move task (a redrive out of a dead-letter
// queue). DestinationQueue is empty when each message goes back to the
// queue it was dead-lettered from.
type MoveTaskJSON struct {
	TaskHandle       string    `json:"task_handle"`
	Status           string    `json:"status"`
	SourceQueue      string    `json:"source_queue"`
	DestinationQueue string    `json:"destination_queue,omitempty"`
	MaxPerSecond     int       `json:"max_per_second,omitempty"`
	Moved            int64     `json:"moved"`
	ToMove           int64     `json:"to_move"`
	FailureReason    string    `json:"failure_reason,omitempty"`
	StartedAt        time.Time `json:"started_at"`
}

// MoveTasksJSON lists a queue's move tasks, newest first.
type MoveTasksJSON struct {
	Now       time.Time      `json:"now"`
	MoveTasks []MoveTaskJSON `json:"move_tasks"`
}

// QueueDetailJSON is everything the queue page shows.
type QueueDetailJSON struct {
	Now             time.Time            `json:"now"`
	Queue           QueueSummaryJSON     `json:"queue"`
	Attributes      map[string]string    `json:"attributes"`
	LeaseReport     LeaseReportJSON      `json:"lease_report"`
	Leases          ActiveLeasesJSON     `json:"active_leases"`
	Histogram       HistogramJSON        `json:"histogram"`
	LateCompletions []LateCompletionJSON `json:"late_completions"`
	MoveTasks       []MoveTaskJSON       `json:"move_tasks"`
}

// MessageViewJSON is one message's lease history with what is needed to
// draw it. Found is false while the ledger remembers no event of the
// message (it may not have been received yet).
type MessageViewJSON struct {
	Now                      time.Time        `json:"now"`
	Queue                    string           `json:"queue"`
	MessageID                string           `json:"message_id"`
	VisibilityTimeoutSeconds int              `json:"visibility_timeout_seconds"`
	Found                    bool             `json:"found"`
	Events                   []LeaseEventJSON `json:"events"`
}

// viewFunc computes one view for a request.
type viewFunc func(r *http.Request) (any, error)

// serveView answers a GET with the view's JSON.
func (s *Server) serveView(view viewFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := view(r)
		if err != nil {
			s.adminError(w, err)
			return
		}
		writeJSON(w, v)
	}
}

func (s *Server) now() time.Time { return s.engine.Clock().Now().UTC() }

func (s *Server) viewQueues(r *http.Request) (any, error) {
	ctx := r.Context()
	ref := s.adminRef(r)
	// Every page: one ListQueues answers at most 1,000.
	var queues []*baton.Queue
	page := 1000
	for next := ""; ; {
		qs, token, err := s.engine.ListQueues(ctx, engine.ListQueuesParams{Region: ref.Region, Account: ref.Account, MaxResults: &page, NextToken: next})
		if err != nil {
			return nil, err
		}
		queues = append(queues, qs...)
		if next = token; next == "" {
			break
		}
	}
	sources := make(map[string][]string)
	for _, q := range queues {
		if dlq, _ := redriveOf(q.Attributes.RedrivePolicy); dlq != "" {
			sources[dlq] = append(sources[dlq], q.Name)
		}
	}
	out := QueueListJSON{Now: s.now(), Queues: make([]QueueSummaryJSON, 0, len(queues))}
	for _, q := range queues {
		sum, err := s.queueSummary(ctx, q, sources[q.Name])
		if baton.IsCode(err, baton.ErrQueueDoesNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out.Queues = append(out.Queues, sum)
	}
	return out, nil
}

func (s *Server) queueSummary(ctx context.Context, q *baton.Queue, sources []string) (QueueSummaryJSON, error) {
	ref := engine.QueueRef{Region: q.Region, Account: q.Account, Name: q.Name}
	counts, err := s.engine.QueueCounts(ctx, ref)
	if err != nil {
		return QueueSummaryJSON{}, err
	}
	rep, err := s.engine.LeaseReport(ctx, ref)
	if err != nil {
		return QueueSummaryJSON{}, err
	}
	act, err := s.engine.QueueActivity(ctx, ref)
	if err != nil {
		return QueueSummaryJSON{}, err
	}
	dlq, maxReceives := redriveOf(q.Attributes.RedrivePolicy)
	if sources == nil {
		sources = []string{}
	}
	return QueueSummaryJSON{
		Name: q.Name, Region: q.Region, ARN: s.engine.QueueARN(q), FIFO: q.IsFIFO(),
		Visible: counts.Visible, InFlight: counts.InFlight, Delayed: counts.Delayed,
		OldestAgeSeconds:         counts.OldestAge.Seconds(),
		VisibilityTimeoutSeconds: q.Attributes.VisibilityTimeout,
		Diagnosis:                rep.Diagnosis, DeadLetterQueue: dlq, MaxReceiveCount: maxReceives,
		DeadLetterSources: sources, Activity: ActivityToJSON(act),
	}, nil
}

// redriveOf reads a RedrivePolicy (which the engine has validated): the
// dead-letter queue's name and the receive count that sends a message
// there.
func redriveOf(policy string) (dlq string, maxReceiveCount int) {
	if policy == "" {
		return "", 0
	}
	var p struct {
		Target     string          `json:"deadLetterTargetArn"`
		MaxReceive json.RawMessage `json:"maxReceiveCount"`
	}
	if json.Unmarshal([]byte(policy), &p) != nil {
		return "", 0
	}
	if i := strings.LastIndexByte(p.Target, ':'); i >= 0 {
		dlq = p.Target[i+1:]
	}
	maxReceiveCount, _ = strconv.Atoi(strings.Trim(string(p.MaxReceive), `"`))
	return dlq, maxReceiveCount
}

// ActivityToJSON is the admin API's form of a queue's activity by minute;
// `baton proxy` answers in it too.
func ActivityToJSON(act []ledger.MinuteActivity) []MinuteActivityJSON {
	out := make([]MinuteActivityJSON, len(act))
	for i, m := range act {
		out[i] = MinuteActivityJSON{Minute: m.Minute, Sent: m.Sent, Received: m.Received, Deleted: m.Deleted, Expired: m.Expired, Late: m.Late}
	}
	return out
}

func (s *Server) viewQueue(r *http.Request) (any, error) {
	ctx := r.Context()
	ref := s.adminRef(r)
	q, err := s.engine.GetQueue(ctx, ref)
	if err != nil {
		return nil, err
	}
	sourceQueues, _, err := s.engine.ListDeadLetterSourceQueues(ctx, ref, engine.ListDeadLetterSourceQueuesParams{})
	if err != nil {
		return nil, err
	}
	sources := make([]string, len(sourceQueues))
	for i, sq := range sourceQueues {
		sources[i] = sq.Name
	}
	sum, err := s.queueSummary(ctx, q, sources)
	if err != nil {
		return nil, err
	}
	attrs, err := s.engine.GetQueueAttributes(ctx, ref, []string{"All"})
	if err != nil {
		return nil, err
	}
	rep, err := s.engine.LeaseReport(ctx, ref)
	if err != nil {
		return nil, err
	}
	leases, err := s.activeLeases(ctx, ref)
	if err != nil {
		return nil, err
	}
	hist, err := s.histogram(ctx, ref, q.Attributes.VisibilityTimeout)
	if err != nil {
		return nil, err
	}
	late, err := s.lateCompletions(ctx, ref)
	if err != nil {
		return nil, err
	}
	tasks, err := s.moveTasks(ctx, ref)
	if err != nil {
		return nil, err
	}
	return QueueDetailJSON{
		Now: s.now(), Queue: sum, Attributes: attrs, LeaseReport: LeaseReportToJSON(rep), Leases: leases,
		Histogram: hist, LateCompletions: late.LateCompletions, MoveTasks: tasks.MoveTasks,
	}, nil
}

func (s *Server) viewActiveLeases(r *http.Request) (any, error) {
	return s.activeLeases(r.Context(), s.adminRef(r))
}

func (s *Server) activeLeases(ctx context.Context, ref engine.QueueRef) (ActiveLeasesJSON, error) {
	leases, err := s.engine.ActiveLeases(ctx, ref, maxLeasesShown)
	if err != nil {
		return ActiveLeasesJSON{}, err
	}
	return ActiveLeasesToJSON(s.now(), leases), nil
}

// ActiveLeasesToJSON is the admin API's form of the running leases;
// `baton proxy` answers in it too.
func ActiveLeasesToJSON(now time.Time, leases []ledger.ActiveLease) ActiveLeasesJSON {
	out := ActiveLeasesJSON{Now: now, Leases: make([]ActiveLeaseJSON, 0, len(leases))}
	for _, l := range leases {
		out.Leases = append(out.Leases, ActiveLeaseJSON{
			MessageID: l.MessageID, Epoch: l.Epoch, Begin: l.Begin, Deadline: l.Deadline, Renewals: l.Renewals,
			Receiver: l.Client.Addr, UserAgent: l.Client.UserAgent, BeforeStart: l.Seeded,
		})
	}
	return out
}

func (s *Server) viewHistogram(r *http.Request) (any, error) {
	ref := s.adminRef(r)
	q, err := s.engine.GetQueue(r.Context(), ref)
	if err != nil {
		return nil, err
	}
	return s.histogram(r.Context(), ref, q.Attributes.VisibilityTimeout)
}

// histogramFractions are the bucket bounds as fractions of the visibility
// timeout: tenths up to it, then overruns.
var histogramFractions = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.5, 2, 3, 5}

// histogramFixed are the bounds, in seconds, when the timeout is 0.
var histogramFixed = []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300}

// HistogramBounds are the upper bounds of the lease-duration histogram's
// buckets for a visibility timeout, in seconds.
func HistogramBounds(visibilityTimeout int) []time.Duration {
	var out []time.Duration
	if visibilityTimeout <= 0 {
		for _, sec := range histogramFixed {
			out = append(out, time.Duration(sec*float64(time.Second)))
		}
		return out
	}
	vt := time.Duration(visibilityTimeout) * time.Second
	for _, f := range histogramFractions {
		out = append(out, time.Duration(f*float64(vt)))
	}
	return out
}

func (s *Server) histogram(ctx context.Context, ref engine.QueueRef, visibilityTimeout int) (HistogramJSON, error) {
	bounds := HistogramBounds(visibilityTimeout)
	buckets, err := s.engine.LeaseHistogram(ctx, ref, bounds)
	if err != nil {
		return HistogramJSON{}, err
	}
	return HistogramToJSON(s.now(), visibilityTimeout, bounds, buckets), nil
}

// HistogramToJSON is the admin API's form of a lease-duration histogram
// counted into the buckets of HistogramBounds(visibilityTimeout);
// `baton proxy` answers in it too.
func HistogramToJSON(now time.Time, visibilityTimeout int, bounds []time.Duration, buckets []ledger.HistogramBucket) HistogramJSON {
	out := HistogramJSON{Now: now, VisibilityTimeoutSeconds: visibilityTimeout, WindowMinutes: 15,
		Buckets: make([]HistogramBucketJSON, len(buckets))}
	lower := 0.0
	for i, b := range buckets {
		out.Buckets[i] = HistogramBucketJSON{GreaterThan: lower, Count: b.Count}
		if i < len(bounds) {
			upper := bounds[i].Seconds()
			out.Buckets[i].AtMost = &upper
			lower = upper
		}
	}
	return out
}

func (s *Server) viewActivity(r *http.Request) (any, error) {
	act, err := s.engine.QueueActivity(r.Context(), s.adminRef(r))
	if err != nil {
		return nil, err
	}
	return ActivityJSON{Now: s.now(), Minutes: ActivityToJSON(act)}, nil
}

func (s *Server) viewLateCompletions(r *http.Request) (any, error) {
	return s.lateCompletions(r.Context(), s.adminRef(r))
}

func (s *Server) lateCompletions(ctx context.Context, ref engine.QueueRef) (LateCompletionsJSON, error) {
	late, err := s.engine.RecentLateCompletions(ctx, ref)
	if err != nil {
		return LateCompletionsJSON{}, err
	}
	return LateCompletionsToJSON(s.now(), late), nil
}

// LateCompletionsToJSON is the admin API's form of late completions;
// `baton proxy` answers in it too.
func LateCompletionsToJSON(now time.Time, late []ledger.LateCompletion) LateCompletionsJSON {
	out := LateCompletionsJSON{Now: now, LateCompletions: make([]LateCompletionJSON, len(late))}
	for i, l := range late {
		out.LateCompletions[i] = LateCompletionJSON{
			MessageID: l.MessageID, At: l.At, Kind: l.Kind, Epoch: l.Epoch, LateSeconds: l.Late.Seconds(),
			Duplicate: l.Duplicate, Refused: l.Refused, AlreadyDeleted: l.AlreadyDeleted, Receiver: l.Client.Addr, UserAgent: l.Client.UserAgent,
		}
	}
	return out
}

func (s *Server) viewMoveTasks(r *http.Request) (any, error) {
	return s.moveTasks(r.Context(), s.adminRef(r))
}

// maxMoveTasksListed is ListMessageMoveTasks' own ceiling.
const maxMoveTasksListed = 10

func (s *Server) moveTasks(ctx context.Context, ref engine.QueueRef) (MoveTasksJSON, error) {
	limit := maxMoveTasksListed
	region := ref.Region
	if region == "" {
		region = s.engine.Region()
	}
	tasks, err := s.engine.ListMessageMoveTasks(ctx, region, ref.Account, engine.RegionARN(region, ref.Account, ref.Name), &limit)
	if baton.IsCode(err, baton.ErrResourceNotFound) {
		return MoveTasksJSON{}, errNoSuchQueue()
	}
	if err != nil {
		return MoveTasksJSON{}, err
	}
	out := MoveTasksJSON{Now: s.now(), MoveTasks: make([]MoveTaskJSON, len(tasks))}
	for i, t := range tasks {
		out.MoveTasks[i] = MoveTaskJSON{
			TaskHandle: t.Handle, Status: t.Status, SourceQueue: arnName(t.SourceARN), DestinationQueue: arnName(t.DestinationARN),
			MaxPerSecond: t.MaxPerSecond, Moved: t.Moved, ToMove: t.ToMove, FailureReason: t.FailureReason, StartedAt: t.StartedAt,
		}
	}
	return out, nil
}

// arnName is the queue name at the end of a queue ARN.
func arnName(arn string) string {
	if arn == "" {
		return ""
	}
	return arn[strings.LastIndexByte(arn, ':')+1:]
}

func (s *Server) viewMessage(r *http.Request) (any, error) {
	ref := s.adminRef(r)
	q, err := s.engine.GetQueue(r.Context(), ref)
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	events, ok, err := s.engine.MessageHistory(r.Context(), ref, id)
	if err != nil {
		return nil, err
	}
	return MessageViewJSON{
		Now: s.now(), Queue: ref.Name, MessageID: id, VisibilityTimeoutSeconds: q.Attributes.VisibilityTimeout,
		Found: ok, Events: LeaseEventsToJSON(events),
	}, nil
}

// LeaseEventsToJSON is the admin API's form of a message's lease events;
// `baton proxy` answers in it too.
func LeaseEventsToJSON(events []ledger.LeaseEvent) []LeaseEventJSON {
	out := make([]LeaseEventJSON, len(events))
	for i, ev := range events {
		j := LeaseEventJSON{At: ev.At, Kind: ev.Kind, Epoch: ev.Epoch, ReceiveCount: ev.ReceiveCount,
			LateSeconds: ev.Late.Seconds(), Duplicate: ev.Duplicate, Refused: ev.Refused, AlreadyDeleted: ev.AlreadyDeleted,
			Receiver: ev.Client.Addr, UserAgent: ev.Client.UserAgent}
		if !ev.Deadline.IsZero() {
			d := ev.Deadline
			j.Deadline = &d
		}
		if !ev.StoreFailedAt.IsZero() {
			f := ev.StoreFailedAt
			j.StoreFailedAt = &f
		}
		out[i] = j
	}
	return out
}

// LeaseReportToJSON is the admin API's form of a lease report, which
// `baton doctor` reads; `baton proxy` answers in it too.
func LeaseReportToJSON(rep *ledger.LeaseReport) LeaseReportJSON {
	out := LeaseReportJSON{
		Queue: rep.Queue, VisibilityTimeoutSeconds: rep.VisibilityTimeout, WindowMinutes: 15,
		LeaseStatsJSON: leaseStatsJSON(rep.Window), Diagnosis: rep.Diagnosis,
		RecommendedVisibilityTimeoutSeconds: rep.RecommendedVisibilityTimeout, Advice: rep.Advice,
		Findings: make([]FindingJSON, len(rep.Findings)), MinFindingLeases: ledger.MinFindingLeases,
		SinceStart: leaseStatsJSON(rep.SinceStart), HistorySince: rep.HistorySince.UTC(),
		HistoryNote: historyNote(rep.HistorySince), Period: "window",
	}
	if rep.JudgedSinceStart {
		out.Period = "since_start"
	}
	for i, f := range rep.Findings {
		out.Findings[i] = FindingJSON{Kind: f.Kind, Leases: f.Leases, Evidence: f.Evidence, Fix: f.Fix}
		if !f.Last.IsZero() {
			at, ago := f.Last.UTC(), f.LastAgo.Seconds()
			out.Findings[i].LastEvent, out.Findings[i].LastEventAt, out.Findings[i].LastEventSecondsAgo = f.LastEvent, &at, &ago
			out.Findings[i].LastSeen = f.LastSeen
		}
		for _, h := range f.Held {
			j := HeldLeaseJSON{
				MessageID: h.MessageID, Epoch: h.Epoch, Begin: h.Begin, HeldSeconds: h.Held.Seconds(), Renewals: h.Renewals,
				Deadline: h.Deadline, CeilingInSeconds: h.CeilingIn.Seconds(), Progress: h.Progress, Refusals: h.Refusals,
				Running: h.Running, Receiver: h.Client.Addr, UserAgent: h.Client.UserAgent, BeforeStart: h.Seeded,
			}
			if !h.LastRenewal.IsZero() {
				last := h.LastRenewal
				j.LastRenewal = &last
			}
			out.Findings[i].HeldLeases = append(out.Findings[i].HeldLeases, j)
		}
	}
	return out
}

// historyNote says plainly that the lease history does not survive a
// restart: the ledger is in memory, whatever the store keeps.
func historyNote(since time.Time) string {
	return "Lease history is kept in memory and starts when the server starts: this server started at " +
		since.UTC().Format(time.RFC3339) + "; leases that ended before then are not counted, and those then in flight " +
		"are judged from when they began, their holders not known."
}

// adminError writes a failure of the dashboard's endpoints: the SQS error's
// message and code (as the Query protocol and the SDKs name it), with its
// HTTP status, 404 for a queue that does not exist. Other failures are
// logged and reported as an internal error.
func (s *Server) adminError(w http.ResponseWriter, err error) {
	var e *baton.Error
	if !errors.As(err, &e) {
		s.log.Error("admin request failed", "err", err)
		e = baton.AsError(err)
	}
	status := e.Code.Spec().Status
	if e.Code == baton.ErrQueueDoesNotExist {
		status = http.StatusNotFound
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": e.Message, "code": e.Code.Spec().QueryCode})
}
