package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// The admin API serves what the engine's lease ledger sees, as JSON with
// stable snake_case fields: `baton doctor` and the dashboard read it. On
// several nodes sharing a PostgreSQL store the ledger holds every node's
// lease events, so any node answers for the cluster; "since start" is since
// the answering node started.
//
//	GET /admin/api/queues/{name}/leases                 the lease report
//	GET /admin/api/queues/{name}/messages/{id}/history  one message's lease events
//	GET /admin/api/queues/{name}/messages               the queue's messages, unleased (admin_browse.go)
//
// Every admin request acts in the region its region query parameter names
// (?region=eu-central-1), else in its own, as an SQS request does (of its
// signature or its host), else in the server's default region.
//
// The dashboard's views and actions are listed in admin_views.go,
// admin_actions.go and admin_stream.go.

// LeaseStatsJSON is the wire form of ledger.LeaseStats.
type LeaseStatsJSON struct {
	MessagesSent    uint64 `json:"messages_sent"`
	LeasesStarted   uint64 `json:"leases_started"`
	LeasesCompleted uint64 `json:"leases_completed"`
	// LeasesCompletedTimeUnknown are the completed leases (counted in
	// LeasesCompleted) whose delete's answer was lost and whose retry came
	// after the lease's end: when the delete was made, and whether in
	// time, is not known, and the lease durations do not count them.
	LeasesCompletedTimeUnknown uint64 `json:"leases_completed_time_unknown"`
	// LeasesCompletedTimeUnknownInTime are those of them on a FIFO queue,
	// which refuses a late delete: their delete was made in time, when is
	// not known.
	LeasesCompletedTimeUnknownInTime uint64 `json:"leases_completed_time_unknown_in_time"`
	// LateDeletesRefused are the late deletes a FIFO queue refused: their
	// messages were not deleted, so they are no completed leases, but the
	// lease durations (p50 to max) count how long their handlers ran.
	LateDeletesRefused uint64 `json:"late_deletes_refused"`
	// DeletesAlreadyDeleted are the deletes that found their message
	// already deleted (by the receiver it went to after a lapse, a purge):
	// SQS answers them with success, but they deleted nothing, so they are
	// no completed leases; the lease durations count them as the refused.
	DeletesAlreadyDeleted uint64 `json:"deletes_already_deleted"`
	// LeasesTimed are the leases the lease durations (p50 to max) are of,
	// those whose handler's time is known (ledger.LeaseStats.Finished):
	// the completed less LeasesCompletedTimeUnknown, the late deletes
	// refused and the deletes that found their message already deleted.
	// With none, the durations are no figure.
	LeasesTimed     uint64  `json:"leases_timed"`
	LeaseP50Seconds float64 `json:"lease_p50_seconds"`
	LeaseP90Seconds float64 `json:"lease_p90_seconds"`
	LeaseP99Seconds float64 `json:"lease_p99_seconds"`
	LeaseMaxSeconds float64 `json:"lease_max_seconds"`
	ExpiredLeases   uint64  `json:"expired_leases"`
	LateCompletions uint64  `json:"late_completions"`
	// LateLeases are the leases the late completions came by, each once:
	// one lapsed lease may see several late requests, and a lease that
	// lapsed before the period may complete late in it.
	LateLeases          uint64 `json:"late_leases"`
	ConfirmedDuplicates uint64 `json:"confirmed_duplicates"`
	// ConfirmedDuplicatesStoreFailed are those of ConfirmedDuplicates
	// whose holder deleted in time, the store failing the delete
	// (store-failed): the rest came of late completions.
	ConfirmedDuplicatesStoreFailed uint64 `json:"confirmed_duplicates_store_failed"`
	RedeliveriesLapsedWhileWorking uint64 `json:"redeliveries_lapsed_while_working"`
	// RedeliveriesStoreFailed are the redeliveries after a lapse whose
	// holder deleted in time, the store failing that delete (store-failed).
	RedeliveriesStoreFailed   uint64  `json:"redeliveries_store_failed"`
	RedeliveriesNeverReturned uint64  `json:"redeliveries_never_returned"`
	Renewals                  uint64  `json:"renewals"`
	RenewalsPerLease          float64 `json:"renewals_per_lease"`
	Releases                  uint64  `json:"releases"`
	DeadLettered              uint64  `json:"dead_lettered"`
	RefusedRenewals           uint64  `json:"refused_renewals"`
}

// LeaseReportJSON is the lease report of one queue. The top-level figures
// are the 15-minute window's; since_start covers the server's life.
type LeaseReportJSON struct {
	Queue                    string `json:"queue"`
	VisibilityTimeoutSeconds int    `json:"visibility_timeout_seconds"`
	WindowMinutes            int    `json:"window_minutes"`
	LeaseStatsJSON
	Diagnosis                           string `json:"diagnosis"`
	RecommendedVisibilityTimeoutSeconds int    `json:"recommended_visibility_timeout_seconds"`
	Advice                              string `json:"advice"`
	// Period is what the findings were judged on: "window" (the top-level
	// figures) or, when the window saw no lease, "since_start". Figures
	// shown beside the findings should be that period's.
	Period string `json:"period"`
	// Findings are the problems the doctor names, the first one the
	// diagnosis; each rests on at least MinFindingLeases leases.
	Findings         []FindingJSON `json:"findings"`
	MinFindingLeases int           `json:"min_finding_leases"`
	// SinceStart covers the life of the node that answers.
	SinceStart LeaseStatsJSON `json:"since_start"`
	// HistorySince is when the answering node started: its lease ledger
	// is kept in memory and starts then, whatever the store, with the
	// leases then in flight (BeforeStart) and none of those that had ended.
	HistorySince time.Time `json:"history_since"`
	HistoryNote  string    `json:"history_note"`
}

// FindingJSON is one problem the doctor names.
type FindingJSON struct {
	Kind string `json:"kind"`
	// Leases is how many leases it rests on.
	Leases     uint64          `json:"leases"`
	Evidence   string          `json:"evidence"`
	Fix        string          `json:"fix"`
	HeldLeases []HeldLeaseJSON `json:"held_leases,omitempty"`
	// LastEvent is the latest event the finding rests on ("lapse", "late
	// completion", ...), LastEventAt when it happened and
	// LastEventSecondsAgo how long before the report; LastSeen says so in
	// words. A finding stays while its evidence is in the period judged:
	// these tell a cause still at work from one that may have stopped.
	// They are left out of the findings on leases running now.
	LastEvent           string     `json:"last_event,omitempty"`
	LastEventAt         *time.Time `json:"last_event_at,omitempty"`
	LastEventSecondsAgo *float64   `json:"last_event_seconds_ago,omitempty"`
	LastSeen            string     `json:"last_seen,omitempty"`
}

// HeldLeaseJSON is a lease a finding names (ledger.HeldLease): held far
// beyond the queue's p99, or refused a renewal by the 12-hour ceiling.
type HeldLeaseJSON struct {
	MessageID   string     `json:"message_id"`
	Epoch       uint32     `json:"lease"`
	Begin       time.Time  `json:"begin"`
	HeldSeconds float64    `json:"held_seconds"`
	Renewals    int        `json:"renewals"`
	LastRenewal *time.Time `json:"last_renewal,omitempty"`
	Deadline    time.Time  `json:"deadline"`
	// Progress: its latest renewal was made on the handler's progress.
	Progress bool `json:"renewed_on_progress,omitempty"`
	Refusals int  `json:"refused_renewals,omitempty"`
	Running  bool `json:"running"`
	// CeilingInSeconds is how long until the lease reaches 12 hours after
	// its receive, which no renewal can pass.
	CeilingInSeconds float64 `json:"ceiling_in_seconds"`
	Receiver         string  `json:"receiver,omitempty"`
	UserAgent        string  `json:"user_agent,omitempty"`
	// BeforeStart: the lease was running when the server started; its
	// holder is not known, and Renewals counts only those made since.
	BeforeStart bool `json:"leased_before_start,omitempty"`
}

// LeaseEventJSON is one event of a message's lease history.
type LeaseEventJSON struct {
	At           time.Time  `json:"at"`
	Kind         string     `json:"kind"`
	Epoch        uint32     `json:"lease"`
	ReceiveCount int        `json:"receive_count,omitempty"`
	Deadline     *time.Time `json:"deadline,omitempty"`
	LateSeconds  float64    `json:"late_seconds,omitempty"`
	Duplicate    bool       `json:"duplicate,omitempty"`
	// Refused: a late delete the queue refused (FIFO): the message was not
	// deleted and runs again. AlreadyDeleted: a delete that found the
	// message already deleted: it deleted nothing.
	Refused        bool `json:"refused,omitempty"`
	AlreadyDeleted bool `json:"already_deleted,omitempty"`
	// StoreFailedAt, on a delete after its lease's lapse: when its first
	// attempt came, within the lease, which the store failed without
	// making it (answered 503): the lapse was the store's.
	StoreFailedAt *time.Time `json:"store_failed_at,omitempty"`
	Receiver      string     `json:"receiver,omitempty"`
	UserAgent     string     `json:"user_agent,omitempty"`
}

// MessageHistoryJSON is a message's lease history.
type MessageHistoryJSON struct {
	Queue     string           `json:"queue"`
	MessageID string           `json:"message_id"`
	Events    []LeaseEventJSON `json:"events"`
}

func leaseStatsJSON(s ledger.LeaseStats) LeaseStatsJSON {
	return LeaseStatsJSON{
		MessagesSent: s.Sent, LeasesStarted: s.Received, LeasesCompleted: s.Completed, LateDeletesRefused: s.RefusedDeletes,
		DeletesAlreadyDeleted: s.AlreadyDeleted, LeasesCompletedTimeUnknown: s.Untimed,
		LeasesCompletedTimeUnknownInTime: s.UntimedInTime, LeasesTimed: s.Finished(),
		LeaseP50Seconds: s.P50.Seconds(), LeaseP90Seconds: s.P90.Seconds(), LeaseP99Seconds: s.P99.Seconds(), LeaseMaxSeconds: s.Max.Seconds(),
		ExpiredLeases: s.Expired, LateCompletions: s.Late, LateLeases: s.LateLeases, ConfirmedDuplicates: s.Duplicates,
		ConfirmedDuplicatesStoreFailed: s.DuplicatesStoreFailed,
		RedeliveriesLapsedWhileWorking: s.RedeliveriesLapsedWhileWorking, RedeliveriesNeverReturned: s.RedeliveriesNeverReturned,
		RedeliveriesStoreFailed: s.RedeliveriesStoreFailed,
		Renewals:                s.Renewals, RenewalsPerLease: s.RenewalsPerLease, Releases: s.Releases, DeadLettered: s.DeadLettered,
		RefusedRenewals: s.RefusedRenewals,
	}
}

// adminMux returns the admin API. Its answers describe an account's queues
// and messages: no cache may keep them, a browser's included, and none may
// be read as anything but what it says it is.
func (s *Server) adminMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/api/queues/{name}/leases", s.adminLeases)
	mux.HandleFunc("GET /admin/api/queues/{name}/messages/{id}/history", s.adminHistory)
	mux.HandleFunc("GET /admin/api/queues/{name}/messages", s.adminBrowse)
	// The dashboard's views, each also as a live stream of snapshots.
	streams := newStreamLimiter(maxStreams)
	for path, view := range map[string]viewFunc{
		"/queues":                         s.viewQueues,
		"/queues/{name}":                  s.viewQueue,
		"/queues/{name}/active-leases":    s.viewActiveLeases,
		"/queues/{name}/histogram":        s.viewHistogram,
		"/queues/{name}/activity":         s.viewActivity,
		"/queues/{name}/late-completions": s.viewLateCompletions,
		"/queues/{name}/move-tasks":       s.viewMoveTasks,
		"/queues/{name}/messages/{id}":    s.viewMessage,
		"/topics":                         s.viewTopics, // admin_topics.go
		// A topic's page and the record of what SNS did not deliver (admin_sns_record_view.go).
		"/topics/{name}": s.viewTopic,
		"/sns/record":    s.viewSNSRecord,
	} {
		mux.HandleFunc("GET /admin/api"+path, s.serveView(view))
		mux.HandleFunc("GET /admin/api/events"+path, s.streamView(view, streams))
	}
	// The dashboard's actions.
	mux.HandleFunc("POST /admin/api/queues/{name}/messages", s.action(s.actionSend))
	mux.HandleFunc("POST /admin/api/queues/{name}/purge", s.action(s.actionPurge))
	mux.HandleFunc("POST /admin/api/queues/{name}/attributes", s.action(s.actionSetAttributes))
	mux.HandleFunc("POST /admin/api/queues/{name}/move-tasks", s.action(s.actionStartMoveTask))
	mux.HandleFunc("POST /admin/api/queues/{name}/move-tasks/cancel", s.action(s.actionCancelMoveTask))
	mux.HandleFunc("POST /admin/api/queues", s.action(s.actionCreateQueue))
	mux.HandleFunc("POST /admin/api/queues/{name}/delete", s.action(s.actionDeleteQueue))
	mux.HandleFunc("POST /admin/api/queues/{name}/messages/{id}/delete", s.action(s.actionDeleteMessage))
	mux.HandleFunc("POST /admin/api/queues/{name}/messages/{id}/release", s.action(s.actionReleaseMessage))
	mux.HandleFunc("POST /admin/api/queues/{name}/messages/{id}/move", s.action(s.actionMoveMessage))
	mux.HandleFunc("POST /admin/api/backup", s.action(s.actionBackup))
	// The test-state controls (admin_state.go).
	mux.HandleFunc("POST /admin/api/reset", s.action(s.actionReset))
	mux.HandleFunc("GET /admin/api/export", s.adminExport)
	mux.HandleFunc("POST /admin/api/import", s.action(s.actionImport))
	// What SNS would have sent email, sms, lambda... (admin_sns_deliveries.go).
	mux.HandleFunc("GET /admin/api/sns/deliveries", s.adminSNSDeliveries)
	mux.HandleFunc("DELETE /admin/api/sns/deliveries", s.adminClearSNSDeliveries)
	mux.HandleFunc("/admin/api/", func(w http.ResponseWriter, r *http.Request) {
		writeAdminError(w, http.StatusNotFound, "no such admin endpoint")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
}

// adminRef names the queue of an admin request: {name} in the account of
// the request, in the region its region parameter names (?region=eu-west-1),
// else the request's own as for the SQS API (that of its signature, as
// `baton doctor` signs, or of its host), else the default region. The
// admin API, like the SQS API, acts in one region per request.
func (s *Server) adminRef(r *http.Request) engine.QueueRef {
	account := baton.AccountFromContext(r.Context())
	if account == "" {
		account = s.account
	}
	region := r.URL.Query().Get("region")
	if region == "" {
		region, _ = requestRegion(r) // a scope naming no region is refused with credentials on; else it is ignored
	}
	return engine.QueueRef{Region: region, Account: account, Name: r.PathValue("name")}
}

func (s *Server) adminLeases(w http.ResponseWriter, r *http.Request) {
	rep, err := s.engine.LeaseReport(r.Context(), s.adminRef(r))
	if err != nil {
		s.adminError(w, err)
		return
	}
	writeJSON(w, LeaseReportToJSON(rep))
}

func (s *Server) adminHistory(w http.ResponseWriter, r *http.Request) {
	ref := s.adminRef(r)
	id := r.PathValue("id")
	events, ok, err := s.engine.MessageHistory(r.Context(), ref, id)
	if err != nil {
		s.adminError(w, err)
		return
	}
	if !ok {
		writeAdminError(w, http.StatusNotFound, "no lease history for message "+id)
		return
	}
	writeJSON(w, MessageHistoryJSON{Queue: ref.Name, MessageID: id, Events: LeaseEventsToJSON(events)})
}

func writeAdminError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
