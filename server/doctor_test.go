package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

func leaseReport(t *testing.T, srv *testutil.Server, queue string) server.LeaseReportJSON {
	t.Helper()
	var rep server.LeaseReportJSON
	getJSON(t, srv.URL+"/admin/api/queues/"+queue+"/leases", &rep)
	return rep
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// step advances the fake clock to t (seconds after the epoch).
func step(srv *testutil.Server, t int) {
	srv.Clock.Set(testutil.Epoch.Add(time.Duration(t) * time.Second))
}

func del(t *testing.T, c *sqs.Client, url string, m types.Message) {
	t.Helper()
	if err := deleteMessage(c, url, m.ReceiptHandle); err != nil {
		t.Fatal(err)
	}
}

// Incident (a): a 30 s lease, 90 s handlers that delete when done, three
// workers. The message runs three times; every delete comes late.
func TestDoctorLeaseTooShort(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "slow", map[string]string{"VisibilityTimeout": "30"})
	id := mustSend(t, c, url, "job")
	a := receiveOne(t, c, url, nil)
	step(srv, 31)
	b := receiveOne(t, c, url, nil)
	step(srv, 62)
	cc := receiveOne(t, c, url, nil)
	step(srv, 90)
	del(t, c, url, a)
	step(srv, 121)
	del(t, c, url, b)
	step(srv, 152)
	del(t, c, url, cc)

	rep := leaseReport(t, srv, "slow")
	if rep.Diagnosis != "lease-too-short" {
		t.Errorf("diagnosis = %q, want lease-too-short (%s)", rep.Diagnosis, rep.Advice)
	}
	// C's lease ends when A's late delete removes the message at t=90, two
	// seconds before it would have lapsed.
	if rep.LateCompletions != 3 || rep.ConfirmedDuplicates != 2 || rep.ExpiredLeases != 2 {
		t.Errorf("late %d, duplicates %d, expired %d; want 3, 2, 2", rep.LateCompletions, rep.ConfirmedDuplicates, rep.ExpiredLeases)
	}
	if rep.RedeliveriesLapsedWhileWorking != 2 || rep.RedeliveriesNeverReturned != 0 {
		t.Errorf("redeliveries lapsed-while-working %d, never-returned %d; want 2, 0", rep.RedeliveriesLapsedWhileWorking, rep.RedeliveriesNeverReturned)
	}
	if rep.RecommendedVisibilityTimeoutSeconds < 135 {
		t.Errorf("recommended timeout %d s, want at least 135 (p99 90 s × 1.5)", rep.RecommendedVisibilityTimeoutSeconds)
	}
	// A's late delete deleted the message; B's and C's found it already
	// deleted: they succeed, as on SQS, but complete nothing. Their
	// handlers ran 90 s too, and the p99 counts them.
	if rep.LeaseP99Seconds < 89 || rep.LeaseP99Seconds > 91 || rep.VisibilityTimeoutSeconds != 30 || rep.LeasesCompleted != 1 || rep.DeletesAlreadyDeleted != 2 {
		t.Errorf("report = %+v", rep)
	}

	var h server.MessageHistoryJSON
	getJSON(t, srv.URL+"/admin/api/queues/slow/messages/"+id+"/history", &h)
	var kinds []string
	for _, ev := range h.Events {
		kinds = append(kinds, ev.Kind)
	}
	want := []string{"receive", "expire", "receive", "expire", "receive", "late-delete", "removed", "late-delete", "late-delete"}
	if !sameOrder(kinds, want) {
		t.Errorf("history = %v, want %v", kinds, want)
	}
	if first := h.Events[5]; first.LateSeconds != 60 || !first.Duplicate || first.AlreadyDeleted {
		t.Errorf("A's late delete = %+v, want 60 s late, a duplicate, that deleted the message", first)
	}
	for _, ev := range h.Events[7:] {
		if !ev.AlreadyDeleted || ev.Refused {
			t.Errorf("B's or C's late delete = %+v, want it marked already deleted", ev)
		}
	}
}

// Incident (b): handlers that never come back, in a consumer that goes on
// polling: it takes the message again after each lapse, a fourth time too.
func TestDoctorHandlerFailing(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "failing", map[string]string{"VisibilityTimeout": "30"})
	mustSend(t, c, url, "job")
	for i := range 4 {
		step(srv, 31*i)
		receiveOne(t, c, url, nil)
	}
	step(srv, 100)
	rep := leaseReport(t, srv, "failing")
	if rep.Diagnosis != "handler-failing" {
		t.Errorf("diagnosis = %q, want handler-failing (%s)", rep.Diagnosis, rep.Advice)
	}
	if rep.ExpiredLeases != 3 || rep.RedeliveriesNeverReturned != 3 || rep.LateCompletions != 0 {
		t.Errorf("expired %d, never-returned %d, late %d; want 3, 3, 0", rep.ExpiredLeases, rep.RedeliveriesNeverReturned, rep.LateCompletions)
	}
	if rep.RecommendedVisibilityTimeoutSeconds != 30 {
		t.Errorf("recommended %d, want the timeout in force", rep.RecommendedVisibilityTimeoutSeconds)
	}
	// The finding says when its latest lapse was: the lease received at
	// 62 s lapsed at 92 s, 8 s before the report.
	var raw struct {
		Findings []map[string]any `json:"findings"`
	}
	getJSON(t, srv.URL+"/admin/api/queues/failing/leases", &raw)
	if len(raw.Findings) != 1 {
		t.Fatalf("findings %v", raw.Findings)
	}
	f, lapsed := raw.Findings[0], testutil.Epoch.Add(92*time.Second).UTC().Format(time.RFC3339)
	if f["last_event"] != "lapse" || f["last_event_at"] != lapsed || f["last_event_seconds_ago"] != 8.0 ||
		f["last_seen"] != "last lapse 8s ago, at "+lapsed {
		t.Errorf("finding's latest event: %v", f)
	}
}

// Incident (c): 90 s handlers that renew their 30 s lease every 10 s.
func TestDoctorHealthyWithRenewals(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "renewing", map[string]string{"VisibilityTimeout": "30"})
	for i := range 3 {
		mustSend(t, c, url, "job")
		start := 100 * i
		step(srv, start)
		m := receiveOne(t, c, url, nil)
		for s := 10; s < 90; s += 10 {
			step(srv, start+s)
			if err := changeVisibility(c, url, m.ReceiptHandle, 30); err != nil {
				t.Fatal(err)
			}
		}
		step(srv, start+90)
		del(t, c, url, m)
	}
	rep := leaseReport(t, srv, "renewing")
	if rep.Diagnosis != "healthy" || rep.ExpiredLeases != 0 || rep.LateCompletions != 0 {
		t.Errorf("diagnosis %q, expired %d, late %d; want healthy, 0, 0 (%s)", rep.Diagnosis, rep.ExpiredLeases, rep.LateCompletions, rep.Advice)
	}
	if rep.Renewals != 24 || rep.RenewalsPerLease != 8 {
		t.Errorf("renewals %d (%.1f per lease), want 24 (8)", rep.Renewals, rep.RenewalsPerLease)
	}
}

func TestAdminErrors(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	srv.MustCreateQueue(t, "q", nil)
	for _, path := range []string{"/admin/api/queues/nope/leases", "/admin/api/queues/q/messages/nope/history", "/admin/api/other"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// Incident (d): a hung handler whose heartbeat renews its 30 s lease every
// 20 s, on a queue whose handlers take 8 s. The report names the lease held
// and renewed far beyond the p99 (with both readings: the server cannot see
// the handler), the metrics count it, and the gauges make p99 against the
// timeout alertable.
func TestDoctorHungHeartbeat(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "hung", map[string]string{"VisibilityTimeout": "30"})
	for i := range 3 {
		mustSend(t, c, url, "job")
		step(srv, 10*i)
		m := receiveOne(t, c, url, nil)
		step(srv, 10*i+8)
		del(t, c, url, m)
	}
	id := mustSend(t, c, url, "stuck")
	step(srv, 100)
	m := receiveOne(t, c, url, nil)
	for s := 120; s <= 400; s += 20 {
		step(srv, s)
		if err := changeVisibility(c, url, m.ReceiptHandle, 30); err != nil {
			t.Fatal(err)
		}
	}
	step(srv, 410)
	rep := leaseReport(t, srv, "hung")
	if rep.Diagnosis != "held-renewed" || len(rep.Findings) != 1 || rep.MinFindingLeases != 3 {
		t.Fatalf("diagnosis %q, findings %+v", rep.Diagnosis, rep.Findings)
	}
	f := rep.Findings[0]
	if f.Leases != 3 || len(f.HeldLeases) != 1 || f.HeldLeases[0].MessageID != id || f.HeldLeases[0].HeldSeconds != 310 ||
		f.HeldLeases[0].Renewals != 15 || f.HeldLeases[0].CeilingInSeconds != 43200-310 || !f.HeldLeases[0].Running || f.HeldLeases[0].Progress {
		t.Errorf("finding %+v", f)
	}
	// Its lease runs now: no latest event is named, as if it were past.
	if f.LastEvent != "" || f.LastEventAt != nil || f.LastEventSecondsAgo != nil || f.LastSeen != "" {
		t.Errorf("a finding on a lease running now names a latest event: %+v", f)
	}
	if !rep.HistorySince.Equal(testutil.Epoch) || rep.HistoryNote == "" {
		t.Errorf("history since %v, note %q; want the server's start", rep.HistorySince, rep.HistoryNote)
	}
	fams := scrape(t, srv.URL)
	labels := map[string]string{"queue": "hung"}
	if v := value(t, fams, "baton_queue_visibility_timeout_seconds", labels).GetGauge().GetValue(); v != 30 {
		t.Errorf("visibility timeout gauge %v, want 30", v)
	}
	if v := value(t, fams, "baton_lease_ceiling_margin_seconds", labels).GetGauge().GetValue(); v != 43200-310 {
		t.Errorf("ceiling margin %v, want %d", v, 43200-310)
	}
	if v := value(t, fams, "baton_lease_hung", labels).GetGauge().GetValue(); v != 1 {
		t.Errorf("hung leases %v, want 1", v)
	}
	del(t, c, url, m)
	fams = scrape(t, srv.URL)
	if v := value(t, fams, "baton_lease_ceiling_margin_seconds", labels).GetGauge().GetValue(); v != 43200 {
		t.Errorf("ceiling margin with no lease running %v, want 43200", v)
	}
	if v := value(t, fams, "baton_lease_hung", labels).GetGauge().GetValue(); v != 0 {
		t.Errorf("hung leases after the delete %v, want 0", v)
	}
}

// Incident (e): some handlers overrun, others throw, through the SQS API.
func TestDoctorMixed(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "mixed", map[string]string{"VisibilityTimeout": "30"})
	receiveAll := func() map[string]types.Message {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]types.Message{}
		for _, m := range out.Messages {
			got[*m.MessageId] = m
		}
		return got
	}
	var slow, failing []string
	for range 3 {
		slow = append(slow, mustSend(t, c, url, "slow"))
		failing = append(failing, mustSend(t, c, url, "throws"))
	}
	first := receiveAll()
	step(srv, 31)
	second := receiveAll()
	step(srv, 33)
	for _, id := range failing {
		del(t, c, url, second[id])
	}
	step(srv, 45)
	for _, id := range slow {
		del(t, c, url, first[id])
	}
	step(srv, 200)
	rep := leaseReport(t, srv, "mixed")
	var kinds []string
	for _, f := range rep.Findings {
		kinds = append(kinds, f.Kind)
		if f.Evidence == "" || f.Fix == "" || f.Leases < 3 {
			t.Errorf("finding %+v", f)
		}
	}
	if !sameOrder(kinds, []string{"lease-too-short", "handler-failing"}) || rep.Diagnosis != "lease-too-short" {
		t.Errorf("diagnosis %q, findings %v; want both (%s)", rep.Diagnosis, kinds, rep.Advice)
	}
}
