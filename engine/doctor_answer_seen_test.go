package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// A client's request whose answer was lost is no sign the client is
// there: a host gone (a network cut) whose long poll, sent before, comes
// back with a message, or with none, after the client's lease lapsed. Its
// client is seen only once its answer went out (Engine.AnswerWent): the
// lapse before reads as a holder that stopped, not one that failed and
// went on making requests, which it read as when the receive itself
// marked the client seen.
func TestAnswerLostSeesNoClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		// messages the late receive finds; went: its answer went out.
		messages int
		went     bool
		want     string
	}{
		{"leases, lost", 3, false, ledger.DiagnosisHoldersStopped},
		{"nothing, lost", 0, false, ledger.DiagnosisHoldersStopped},
		{"leases, went out", 3, true, ledger.DiagnosisHandlerFailing},
		{"nothing, went out", 0, true, ledger.DiagnosisHandlerFailing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, c := lapsedDoneElsewhere(t, false)
			in.send(tc.messages)
			in.at(40) // c's host is gone; its long poll comes back
			ctx, answer := ledger.WithAnswer(ledger.WithClient(context.Background(), c))
			msgs, err := in.e.ReceiveMessage(ctx, in.ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(10)})
			if err != nil || len(msgs) != tc.messages {
				t.Fatalf("the late receive: %d messages, %v", len(msgs), err)
			}
			if tc.went {
				in.e.AnswerWent(answer)
			} else {
				in.e.AnswerLost(answer)
			}
			in.wantFinding(tc.want)
		})
	}
}

// lapsedDoneElsewhere starts an incident on a queue (FIFO or not) with a
// 30 s lease, whose client c received three messages at 1 s and let their
// leases lapse at 31 s, and another client did them at 35 s.
func lapsedDoneElsewhere(t *testing.T, fifo bool) (*incident, ledger.Client) {
	t.Helper()
	queue, attrs := "jobs", map[string]string{"VisibilityTimeout": "30"}
	if fifo {
		queue, attrs["FifoQueue"] = "jobs.fifo", "true"
	}
	in := newIncident(t, queue, attrs)
	c := ledger.Client{Addr: "10.0.0.7", UserAgent: "worker/1.0"}
	other := ledger.Client{Addr: "10.0.0.8", UserAgent: "worker/1.0"}
	in.sendTo(fifo, 3)
	in.at(1)
	if got := in.receiveAs(c, 10); len(got) != 3 {
		t.Fatalf("received %d, want 3", len(got))
	}
	in.at(35)
	for _, h := range in.receiveAs(other, 10) {
		in.delAs(other, h)
	}
	return in, c
}

// wantFinding fails the test unless the report at 200 s names want, and,
// when want is holders-stopped, not handler-failing.
func (in *incident) wantFinding(want string) {
	in.t.Helper()
	in.at(200)
	r := in.report()
	if k := kinds(r); !slices.Contains(k, want) || want == ledger.DiagnosisHoldersStopped && slices.Contains(k, ledger.DiagnosisHandlerFailing) {
		in.t.Errorf("findings %v; want %s\n%s", k, want, r.Advice)
	}
}
