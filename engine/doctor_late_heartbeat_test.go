package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// A consumer whose heartbeat renews only after the lease has ended (its
// clock runs behind, or it renews at the lease's very end): the renewal is
// answered with success, as SQS answers a ChangeMessageVisibility whose
// lease lapsed with the message not in flight, and extends nothing; the
// handler then deletes late. The lease-too-short finding says the late
// completions include renewals made after the lease ended, which a
// handler without a heartbeat does not show, and that the heartbeat comes
// too late; the old code said only that handlers overran their lease.
// Without a late renewal, nothing of it is said.
func TestDoctorLateHeartbeat(t *testing.T) {
	t.Parallel()
	const said = "3 of the late completions were renewals (ChangeMessageVisibility to a later time) made after the lease had ended"
	for _, renews := range []bool{true, false} {
		t.Run(fmt.Sprintf("renews=%v", renews), func(t *testing.T) {
			t.Parallel()
			in := newIncident(t, "skewed", map[string]string{"VisibilityTimeout": "30"})
			in.send(3)
			handles := in.receiveAs(sdkClient, 10)
			if renews {
				in.at(40) // the heartbeat, 10 s after the lease ended
				for _, h := range handles {
					in.changeAs(sdkClient, h, 30) // answered with success
				}
			}
			in.at(45)
			for _, h := range handles {
				in.delAs(sdkClient, h)
			}
			r := in.report()
			expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
			f := finding(r, ledger.DiagnosisLeaseTooShort)
			if got := strings.Contains(f.Evidence, said) && strings.Contains(f.Fix, "The heartbeat renews too late"); got != renews {
				t.Errorf("late heartbeat said %v, want %v\nevidence: %s\nfix: %s", got, renews, f.Evidence, f.Fix)
			}
			if n := r.Window.LateRenewals; n != map[bool]uint64{true: 3, false: 0}[renews] {
				t.Errorf("late renewals %d", n)
			}
		})
	}
}
