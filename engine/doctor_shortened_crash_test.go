package engine_test

import (
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// Consumers that shorten each lease they take (ChangeMessageVisibility to
// 10 s, under the queue's 30 s) and crash on the message: each holder's
// last request is that change, and its leases reach the end it set with
// nobody working. Three pods in turn, three messages: each message's
// third lease comes after two that ended so, which a retry loop's leases
// do too; but a retry loop needs its holder to go on, and these holders
// made no request since. They stopped (or work on without a request): the
// holders-stopped finding, not a retry loop. It rests on the leases that
// came in a run of releases, as a retry loop's would: the last pod's
// three (a single release with a delay before a stop is a deploy's).
func TestDoctorShortenedThenCrashedIsHoldersStopped(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "crashing", map[string]string{"VisibilityTimeout": "30"})
	in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	pods := []ledger.Client{
		{Addr: "10.0.1.1", UserAgent: sdkClient.UserAgent},
		{Addr: "10.0.1.2", UserAgent: sdkClient.UserAgent},
		{Addr: "10.0.1.3", UserAgent: sdkClient.UserAgent},
	}
	for round, pod := range pods {
		s := 10 + 40*round
		in.at(s)
		got := map[string]string{}
		for range 3 {
			for id, h := range in.receiveAs(pod, 1) {
				got[id] = h
			}
		}
		if len(got) != 3 {
			t.Fatalf("round %d received %d", round, len(got))
		}
		in.at(s + 1)
		for _, h := range got {
			in.changeAs(pod, h, 10) // shortened; then the pod crashes
		}
	}
	in.at(150)
	r := in.report()
	expect(t, r, ledger.DiagnosisHoldersStopped, ledger.DiagnosisHoldersStopped)
	lacks(t, r, ledger.DiagnosisRetryLoop, ledger.DiagnosisHandlerFailing)
	f := finding(r, ledger.DiagnosisHoldersStopped)
	if f.Leases != 3 {
		t.Errorf("holders-stopped on %d leases, want the 3 the last pod left", f.Leases)
	}
	contains(t, f.Evidence, "3 leases lapsed and 1 holder (10.0.1.3", "all of them at the end their holder had brought forward")
}

// The same releases by a consumer that goes on making requests after each
// are a retry loop; not yet known while the holder may still be in a long
// poll begun before its release.
func TestDoctorShortenedByAHolderThatGoesOnIsARetryLoop(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "retrying", map[string]string{"VisibilityTimeout": "30"})
	in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	for round := range 3 {
		s := 10 + 40*round
		in.at(s)
		got := map[string]string{}
		for range 3 {
			for id, h := range in.receiveAs(sdkClient, 1) {
				got[id] = h
			}
		}
		in.at(s + 1)
		for _, h := range got {
			in.changeAs(sdkClient, h, 10) // back in 10 s
		}
		if round < 2 {
			in.at(s + 5)
			in.receiveAs(sdkClient, 1) // polls on: nothing visible
		}
	}
	in.at(105) // the last releases came at 101; their holder not seen since its release at 91
	r := in.report()
	lacks(t, r, ledger.DiagnosisRetryLoop, ledger.DiagnosisHoldersStopped)
	contains(t, r.Advice, "3 leases lapsed in the last 25s and their holders have not been seen since")
	in.at(106)
	in.receiveAs(sdkClient, 1) // polls on
	r = in.report()
	expect(t, r, ledger.DiagnosisRetryLoop, ledger.DiagnosisRetryLoop)
	if f := finding(r, ledger.DiagnosisRetryLoop); f.Leases != 3 {
		t.Errorf("retry-loop on %d leases, want 3", f.Leases)
	}
}

// A consumer that gives back three messages not ready, each with a delay,
// then stops in a deploy, as it may: its releases were no run of
// releases, and no holder stopped holding anything.
func TestDoctorSnoozedOnceThenStoppedIsNoFinding(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "snoozing", map[string]string{"VisibilityTimeout": "30"})
	in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	pod := ledger.Client{Addr: "10.0.1.9", UserAgent: sdkClient.UserAgent}
	in.at(10)
	got := map[string]string{}
	for range 3 {
		for id, h := range in.receiveAs(pod, 1) {
			got[id] = h
		}
	}
	in.at(11)
	for _, h := range got {
		in.changeAs(pod, h, 20) // not ready: back in 20 s
	}
	in.at(100)
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
}
