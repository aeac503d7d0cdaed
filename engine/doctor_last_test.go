package engine_test

import (
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
)

// A finding stays while its evidence is in the period judged: each says
// when the latest event it rests on happened, so that a cause fixed minutes
// ago is told from one still at work, on the fake clock.

// lastIs checks that the finding of kind says its latest event was what,
// at sec seconds after testutil.Epoch, ago before the report, and says so
// in words beginning with seen.
func lastIs(t *testing.T, r *ledger.LeaseReport, kind, what string, sec int, ago time.Duration, seen string) {
	t.Helper()
	f := finding(r, kind)
	if f.Kind == "" {
		t.Fatalf("no %s finding: %s", kind, r.Advice)
	}
	want := testutil.Epoch.Add(time.Duration(sec) * time.Second)
	seen += ", at " + want.UTC().Format(time.RFC3339)
	if !f.Last.Equal(want) || f.LastEvent != what || f.LastAgo != ago || f.LastSeen != seen {
		t.Errorf("%s: last %s %v, %v ago, %q; want %s %v, %v ago, %q", kind, f.LastEvent, f.Last, f.LastAgo, f.LastSeen, what, want, ago, seen)
	}
}

// Handlers that threw, then were fixed: 12 minutes later the finding is
// still made, on the lapses of the window, and says its last lapse was
// 12 minutes ago; while the handlers still throw, it says the last lapse
// was just now.
func TestDoctorLastLapseOfFailingHandlers(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "fixed", map[string]string{"VisibilityTimeout": "30"})
	in.send(3)
	in.receive(3, nil) // every handler throws: the leases lapse at 30 s
	in.at(40)
	r := in.report()
	lastIs(t, r, ledger.DiagnosisHandlerFailing, "lapse", 30, 10*time.Second, "last lapse 10s ago")

	in.at(41)
	for _, h := range in.receive(3, nil) {
		in.del(h) // fixed: the handlers delete since
	}
	for s := 60; s <= 750; s += 30 {
		in.at(s)
		in.send(1)
		for _, h := range in.receive(1, nil) {
			in.del(h)
		}
	}
	r = in.report()
	expect(t, r, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHandlerFailing)
	lastIs(t, r, ledger.DiagnosisHandlerFailing, "lapse", 30, 12*time.Minute, "last lapse 12m0s ago")

	// They throw again: the latest lapse is the new one.
	in.send(1)
	in.receive(1, nil) // lapses at 780 s
	in.at(790)
	lastIs(t, in.report(), ledger.DiagnosisHandlerFailing, "lapse", 780, 10*time.Second, "last lapse 10s ago")
}

// Overrunning handlers: the finding says when the latest late completion
// came.
func TestDoctorLastLateCompletion(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "overrun", map[string]string{"VisibilityTimeout": "30"})
	in.send(1)
	a, b, c := in.overrun()
	in.at(90)
	in.del(a)
	in.at(121)
	in.del(b)
	in.at(152)
	in.del(c)
	in.at(400)
	r := in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	lastIs(t, r, ledger.DiagnosisLeaseTooShort, "late completion", 152, 248*time.Second, "last late completion 4m8s ago")
}

// A release loop says when the latest release at once or dead-letter move
// was; batches that fail whole, their latest receive.
func TestDoctorLastReleaseAndBatch(t *testing.T) {
	t.Parallel()
	in := newRedriveIncident(t, "once", 1)
	in.send(5)
	in.releaseRounds(3)
	in.at(100)
	lastIs(t, in.report(), ledger.DiagnosisReleaseLoop, "release at once or dead-letter move", 1, 99*time.Second,
		"last release at once or dead-letter move 1m39s ago")

	in = newRedriveIncident(t, "throws", 5)
	in.send(3)
	in.receive(3, nil)
	in.at(31)
	in.receive(3, nil)
	in.at(62)
	r := in.report()
	expect(t, r, ledger.DiagnosisBatchFailsWhole, ledger.DiagnosisBatchFailsWhole)
	lastIs(t, r, ledger.DiagnosisBatchFailsWhole, "receive of a batch that failed whole", 31, 31*time.Second,
		"last receive of a batch that failed whole 31s ago")
}
