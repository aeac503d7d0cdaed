package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/server"
)

// A report with two findings prints both, each with the leases it rests
// on, its evidence, when its latest event was (if it names one) and its
// fix, and says since when the history runs.
func TestDoctorWritesEveryFinding(t *testing.T) {
	t.Parallel()
	rep := server.LeaseReportJSON{
		Queue: "mixed", VisibilityTimeoutSeconds: 30, WindowMinutes: 15, Diagnosis: "held-renewed",
		RecommendedVisibilityTimeoutSeconds: 135,
		Findings: []server.FindingJSON{
			{Kind: "held-renewed", Leases: 5, Evidence: "1 lease held far beyond", Fix: "tie the heartbeat to the work",
				HeldLeases: []server.HeldLeaseJSON{{MessageID: "m-1", HeldSeconds: 610, Renewals: 30, CeilingInSeconds: 43200 - 610,
					Running: true, Deadline: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}},
			{Kind: "handler-failing", Leases: 3, Evidence: "3 leases lapsed", Fix: "Look at the consumers' errors",
				LastEvent: "lapse", LastSeen: "last lapse 12m0s ago, at 2026-01-02T02:52:05Z"},
		},
		HistoryNote: "Lease history is kept in memory and starts empty when the server starts",
	}
	rep.LeasesStarted = 9
	out := printed(rep)
	for _, want := range []string{
		"mixed: HELD-RENEWED + HANDLER-FAILING\n",
		"[1/2] held-renewed, on 5 leases\n",
		"lease: message m-1 held 10m10s, renewed 30 times, lease ends 2026-01-02T03:04:05Z, 12 h ceiling in 11h49m50s\n",
		"fix:  tie the heartbeat to the work\n",
		"[2/2] handler-failing, on 3 leases\n",
		"seen: 3 leases lapsed\n    last lapse 12m0s ago, at 2026-01-02T02:52:05Z\n    fix:  Look",
		"recommended visibility timeout: 135s\n",
		"starts empty when the server starts",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "    last "); n != 1 {
		t.Errorf("%d lines of a latest event, want 1 (the held lease runs now):\n%s", n, out)
	}
}

// The figures printed are those of the period the findings were judged on
// (the report's period), as the dashboard shows them: a window whose only
// events are late completions of leases begun before it is still the
// window judged, and its figures are printed, not those since the server
// started; late completions are told apart from the leases they came by.
func TestDoctorFiguresOfTheJudgedPeriod(t *testing.T) {
	t.Parallel()
	rep := server.LeaseReportJSON{Queue: "q", VisibilityTimeoutSeconds: 30, WindowMinutes: 15, Diagnosis: "healthy", Period: "window"}
	rep.LateCompletions, rep.LateLeases, rep.ExpiredLeases = 4, 2, 1
	rep.SinceStart.LeasesStarted, rep.SinceStart.LeasesCompleted = 50, 46
	if out := printed(rep); !strings.Contains(out, "0 leases begun and 0 completed in the last 15 minutes") ||
		!strings.Contains(out, "1 lease lapsed; 4 late completions (deletes or visibility changes after the lease lapsed) by 2 leases\n  0 confirmed duplicate executions\n") {
		t.Errorf("window judged, figures printed:\n%s", out)
	}
	rep.Period, rep.LateCompletions, rep.LateLeases, rep.ExpiredLeases = "since_start", 0, 0, 0
	if out := printed(rep); !strings.Contains(out, "50 leases begun and 46 completed since this server started") {
		t.Errorf("since start judged, figures printed:\n%s", out)
	}
}

// The figures say what the counts know: a redelivery whose lapsed holder
// has not come back (it may yet), and deletes that deleted nothing.
func TestDoctorFiguresSayWhatIsKnown(t *testing.T) {
	t.Parallel()
	rep := server.LeaseReportJSON{Queue: "q", VisibilityTimeoutSeconds: 30, WindowMinutes: 15, Diagnosis: "handler-failing", Period: "window"}
	rep.ExpiredLeases, rep.RedeliveriesNeverReturned = 3, 3
	rep.LeasesCompleted, rep.DeletesAlreadyDeleted, rep.LeasesTimed, rep.LeaseP99Seconds = 1, 2, 3, 90
	out := printed(rep)
	if !strings.Contains(out, "3 where it has not come back") || strings.Contains(out, "never came back") {
		t.Errorf("redeliveries said as known:\n%s", out)
	}
	if !strings.Contains(out, "2 deletes found their message already deleted: they deleted nothing") || !strings.Contains(out, "p99 90.0s") {
		t.Errorf("deletes of messages already deleted not said:\n%s", out)
	}
}

// Leases completed at a time the server did not see (a delete whose answer
// was lost, retried after the lease's end) are said so, and with no other
// completion no lease duration is printed: there is none to print.
func TestDoctorFiguresCompletedTimeUnknown(t *testing.T) {
	t.Parallel()
	rep := server.LeaseReportJSON{Queue: "q", VisibilityTimeoutSeconds: 30, WindowMinutes: 15, Diagnosis: "healthy", Period: "window"}
	rep.LeasesStarted, rep.LeasesCompleted, rep.LeasesCompletedTimeUnknown = 3, 3, 3
	out := printed(rep)
	if !strings.Contains(out, "3 completed by a delete whose answer was lost, retried after the lease's end: whether in time not known") ||
		strings.Contains(out, "lease duration") {
		t.Errorf("completions of a time not known:\n%s", out)
	}
}

// On a FIFO queue, which refuses a late delete, such completions were made
// in time, and the figures say so.
func TestDoctorFiguresCompletedTimeUnknownFIFO(t *testing.T) {
	t.Parallel()
	rep := server.LeaseReportJSON{Queue: "q.fifo", VisibilityTimeoutSeconds: 30, WindowMinutes: 15, Diagnosis: "healthy", Period: "window"}
	rep.LeasesStarted, rep.LeasesCompleted, rep.LeasesCompletedTimeUnknown, rep.LeasesCompletedTimeUnknownInTime = 3, 3, 3, 3
	out := printed(rep)
	if !strings.Contains(out, "3 completed by a delete whose answer was lost, retried after the lease's end: in time (FIFO refuses a late delete), when not known") ||
		strings.Contains(out, "whether in time") {
		t.Errorf("FIFO completions of a time not known:\n%s", out)
	}
}

// Counts of one read in the singular: "renewed 1 times" and "1 leases
// lapsed" were printed.
func TestDoctorCountsOfOne(t *testing.T) {
	t.Parallel()
	if line := heldLine(server.HeldLeaseJSON{MessageID: "m-1", Renewals: 1}); !strings.Contains(line, "renewed 1 time") || strings.Contains(line, "1 times") {
		t.Errorf("a lease renewed once: %q", line)
	}
	rep := server.LeaseReportJSON{Queue: "q", VisibilityTimeoutSeconds: 30, WindowMinutes: 15, Diagnosis: "healthy", Period: "window"}
	rep.LateCompletions, rep.LateLeases, rep.ExpiredLeases, rep.ConfirmedDuplicates = 1, 1, 1, 1
	if out := printed(rep); !strings.Contains(out, "1 lease lapsed; 1 late completion (deletes or visibility changes after the lease lapsed) by 1 lease\n  1 confirmed duplicate execution (messages worked twice): 1 completed late after the message was received again, 0 deleted in time but the store failed the delete") {
		t.Errorf("counts of one:\n%s", out)
	}
}

// A lease line under a finding says the held time its evidence says: the
// evidence rounded 26.6 s to "27s" while the line truncated it to "26s".
// Both go by ledger.FormatDuration now.
func TestDoctorHeldLineRoundsAsTheEvidence(t *testing.T) {
	t.Parallel()
	held, ceiling := 26600*time.Millisecond, 12*time.Hour-26600*time.Millisecond
	line := heldLine(server.HeldLeaseJSON{MessageID: "m-1", Running: true, HeldSeconds: held.Seconds(),
		CeilingInSeconds: ceiling.Seconds(), Renewals: 3})
	if want := " held " + ledger.FormatDuration(held) + ","; want != " held 27s," || !strings.Contains(line, want) {
		t.Errorf("lease line %q: want %q, as the evidence says it", line, want)
	}
	if want := "ceiling in " + ledger.FormatDuration(ceiling); !strings.Contains(line, want) {
		t.Errorf("lease line %q: want %q", line, want)
	}
}

// A queue whose duplicates and redeliveries all came of deletes the store
// failed (store-failed) says so: the line read "0 late completions ... by
// 0 leases, 3 confirmed duplicate executions", as if late completions made
// them, and counted the redeliveries as ones whose holder has not come
// back, though it deleted in time.
func TestDoctorFiguresOfStoreFailed(t *testing.T) {
	t.Parallel()
	rep := server.LeaseReportJSON{Queue: "q", VisibilityTimeoutSeconds: 30, WindowMinutes: 15, Diagnosis: "store-failed", Period: "window"}
	rep.ExpiredLeases, rep.ConfirmedDuplicates, rep.ConfirmedDuplicatesStoreFailed, rep.RedeliveriesStoreFailed = 3, 3, 3, 3
	out := printed(rep)
	for _, want := range []string{
		"3 leases lapsed; 0 late completions (deletes or visibility changes after the lease lapsed) by 0 leases\n",
		"3 confirmed duplicate executions (messages worked twice): 0 completed late after the message was received again, " +
			"3 deleted in time but the store failed the delete, the message received again before the retry\n",
		"redeliveries: 0 lapsed while the holder was still working, 3 whose holder deleted in time and the store failed the delete, 0 where it has not come back\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// printed is rep as baton doctor prints it.
func printed(rep server.LeaseReportJSON) string {
	var b strings.Builder
	writeReport(&b, rep)
	return b.String()
}
