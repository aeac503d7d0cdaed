package pgstore_test

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/store/pgstore"
	"github.com/baton-sqs/baton/store/storetest"
)

// TestMessageScansUseIndexConditions runs sends, receives, counts, deletes
// and the listing of every queue's messages in flight on a queue without
// groups, a fair queue with messages with and without a group id, and a
// FIFO queue, through a store whose sessions plan every statement
// generically (as a cached statement is run once warm) with sequential
// scans disabled, and logs every plan (auto_explain). No plan may read the
// messages' table other than through an index condition narrower than the
// queue: a sequential scan, an index scan without a condition, or one of a
// whole queue, is what a statement gets whose conditions do not imply
// those of the partial index it needs. The table holds enough messages for
// the planner to tell its indexes apart.
func TestMessageScansUseIndexConditions(t *testing.T) {
	t.Parallel()
	cluster := pgtest.MustShared(t)
	u, err := url.Parse(cluster.MustDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	// The store migrates first, on sessions of its own: only the sessions
	// of the store opened below log plans, so every plan logged from now
	// on is this test's (the cluster's log is shared by the test binary).
	mustOpen(t, u.String()).Close()
	// The planner chooses by the table's statistics: a table of a few rows
	// is read alike by any index. Each queue holds as many older messages
	// as a busy one would, ten thousand, the grouped ones in a hundred
	// groups, a tenth of them in flight.
	admin, err := pgx.Connect(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(t.Context())
	if _, err := admin.Exec(t.Context(), `
		INSERT INTO baton_queues (id, account, name, attributes, tags, created_at, modified_at, dedup_scope, fifo, region)
		SELECT q.id, '000000000000', q.name, '{}', '{}', now(), now(), 'queue', q.fifo, 'us-east-1'
		FROM (VALUES (11, 'bulk-plain', false), (12, 'bulk-fair', false), (13, 'bulk-fifo.fifo', true)) q (id, name, fifo);
		INSERT INTO baton_messages (queue_id, id, group_id, body, trace_header, dedup_id, sequence_number, sender_id,
			sent_at, dead_letter_source_arn, visible_at, leased)
		SELECT q, 'bulk-' || i, CASE WHEN q = 11 OR q = 12 AND i % 10 = 0 THEN '' ELSE 'g' || i % 100 END,
			'body', '', '', '', 'sender', now(), '', now() + (i % 10 = 1)::int * interval '1 hour', i % 10 = 1
		FROM generate_series(11, 13) q, generate_series(1, 10000) i;
		ANALYZE baton_messages`); err != nil {
		t.Fatal(err)
	}
	logStart := len(cluster.Log())
	q := u.Query()
	q.Set("options", "-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0"+
		" -c auto_explain.log_format=json -c auto_explain.log_nested_statements=on -c log_min_messages=log"+
		" -c plan_cache_mode=force_generic_plan -c enable_seqscan=off")
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx takes a + for itself
	s, err := pgstore.Open(t.Context(), u.String(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	closeStore := sync.OnceFunc(func() { s.Close() })
	t.Cleanup(closeStore)

	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := base.Add(time.Second)
	plain := storetest.NewQueue(storetest.QueueID(1), "plain")
	fair := storetest.NewQueue(storetest.QueueID(2), "fair")
	fifo := storetest.NewFIFOQueue(storetest.QueueID(3), "fifo.fifo")
	for _, q := range []*baton.Queue{plain, fair, fifo} {
		storetest.MustCreateQueue(t, s, q)
	}
	for i := range 4 {
		storetest.MustSend(t, s, plain.ID, storetest.NewMessage(10*i, base), storetest.NewMessage(10*i+1, base))
		storetest.MustSend(t, s, fair.ID, storetest.NewMessage(100+10*i, base),
			storetest.NewGroupMessage(100+10*i+1, "a", base), storetest.NewGroupMessage(100+10*i+2, "b", base))
		storetest.MustSendFIFO(t, s, fifo.ID, base, storetest.NewGroupMessage(200+10*i, "a", base),
			storetest.NewGroupMessage(200+10*i+1, "b", base))
	}
	// Each statement is run more than once: a session plans a prepared
	// statement when it first runs it, and later runs may plan anew.
	for range 3 {
		for _, q := range []*baton.Queue{plain, fair, fifo} {
			msgs := storetest.MustReceive(t, s, baton.MessageReceiveParams{
				QueueID: q.ID, Now: now, Max: 2, VisibleAt: now.Add(time.Hour), RetentionCutoff: base.Add(-time.Hour),
			})
			storetest.MustStats(t, s, q.ID, now)
			for _, m := range msgs {
				storetest.MustDelete(t, s, baton.MessageDeleteParams{
					QueueID: q.ID, MessageID: m.ID, Epoch: m.Epoch, Now: now, RequireLive: true,
				})
			}
		}
	}
	if _, err := s.MessagesInFlight(t.Context(), now, 10); err != nil {
		t.Fatal(err)
	}
	closeStore() // its sessions end, having logged every plan

	plans := 0
	for _, p := range loggedPlans(t, cluster.Log()[logStart:]) {
		plans++
		for _, bad := range unconditionedScans(p.Plan) {
			t.Errorf("%s\nin the plan of:\n%s", bad, p.Query)
		}
	}
	if plans < 10 {
		t.Fatalf("%d plans logged; want the plans of every statement run (is auto_explain there?)", plans)
	}
}

// loggedPlan is one plan auto_explain logged in JSON.
type loggedPlan struct {
	Query string   `json:"Query Text"`
	Plan  planNode `json:"Plan"`
}

// planNode is a node of a JSON plan, as far as the test reads it.
type planNode struct {
	Type      string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	Index     string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Plans     []planNode `json:"Plans"`
}

// loggedPlans reads the plans auto_explain logged in log.
func loggedPlans(t *testing.T, log string) []loggedPlan {
	t.Helper()
	var out []loggedPlan
	for _, part := range strings.Split(log, "plan:\n")[1:] {
		var p loggedPlan
		if err := json.NewDecoder(strings.NewReader(part)).Decode(&p); err != nil {
			t.Fatalf("a logged plan: %v\n%s", err, part)
		}
		out = append(out, p)
	}
	return out
}

// queueOnly is an index condition on the queue alone: a scan of all the
// queue's entries in the index, unless it stops at the first (the probes of
// baton_messages_by_group for a queue's first group, an Index Only Scan).
var queueOnly = regexp.MustCompile(`^\(queue_id = [^()]+\)$`)

// unconditionedScans describes each node of plan that reads the messages'
// table, or one of its indexes, without an index condition, or with one on
// the queue alone.
func unconditionedScans(n planNode) []string {
	var out []string
	switch {
	case n.Relation == "baton_messages" && n.Type == "Seq Scan":
		out = append(out, n.Type+" on baton_messages")
	case strings.HasPrefix(n.Index, "baton_messages") && n.IndexCond == "":
		out = append(out, n.Type+" using "+n.Index+" without an index condition")
	case queueOnly.MatchString(n.IndexCond) && !(n.Type == "Index Only Scan" && n.Index == "baton_messages_by_group"):
		out = append(out, n.Type+" using "+n.Index+" on the whole queue: "+n.IndexCond)
	}
	for _, c := range n.Plans {
		out = append(out, unconditionedScans(c)...)
	}
	return out
}
