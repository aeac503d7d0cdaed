package engine_test

import (
	"context"
	"testing"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// A FIFO receive retried with its ReceiveRequestAttemptId (a replay:
// the same leases handed out again) sees its client only once its answer
// went out, as any receive (Engine.AnswerWent): a host gone whose retry's
// answer is lost is no sign the client is there. It marked its client
// seen as the replay was recorded, so the lapse before read as a handler
// failing while its holder went on, not a holder that stopped; and so
// did a replay whose client had left before it was answered, which a
// receive's never did (ledger.Event.ClientLeft).
func TestReplayAnswerLostSeesNoClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		// the replay's client left before it was answered; went: its
		// answer went out.
		left, went bool
		want       string
	}{
		{"lost", false, false, ledger.DiagnosisHoldersStopped},
		{"left before", true, false, ledger.DiagnosisHoldersStopped},
		{"went out", false, true, ledger.DiagnosisHandlerFailing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, c := lapsedDoneElsewhere(t, true)
			if _, err := in.e.SendMessage(context.Background(), in.ref, engine.SendParams{Body: "late", GroupID: "late", DedupID: "late"}); err != nil {
				t.Fatal(err)
			}
			// c's host is gone: its receive's answer is lost, and so is
			// the answer of the SDK's retry with the same attempt id.
			receive := func(at int, left bool) *ledger.Answer {
				in.at(at)
				ctx, answer := ledger.WithAnswer(as(c))
				if left {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					cancel()
				}
				msgs, err := in.e.ReceiveMessage(ctx, in.ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), ReceiveRequestAttemptID: "try-1"})
				if err != nil || len(msgs) != 1 {
					t.Fatalf("the receive at %d s: %d messages, %v; want the late one", at, len(msgs), err)
				}
				return answer
			}
			in.e.AnswerLost(receive(36, false))
			replay := receive(40, tc.left)
			if tc.went {
				in.e.AnswerWent(replay)
			} else {
				in.e.AnswerLost(replay)
			}
			in.wantFinding(tc.want)
		})
	}
}
