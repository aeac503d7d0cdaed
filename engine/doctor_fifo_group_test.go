package engine_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// A hung handler on a FIFO queue whose heartbeat keeps its lease alive:
// its message holds back its message group, whose later messages are not
// received while it is in flight (as on SQS). The doctor names the held
// lease (held-renewed, with both readings) and says that its group's later
// messages wait behind it; held unrenewed (a holder gone on a long
// timeout), the same.
func TestDoctorFifoHeldLeaseHoldsItsGroup(t *testing.T) {
	t.Parallel()
	for _, renewed := range []bool{true, false} {
		t.Run("renewed="+strconv.FormatBool(renewed), func(t *testing.T) {
			t.Parallel()
			testFifoHeldLeaseHoldsItsGroup(t, renewed)
		})
	}
}

func testFifoHeldLeaseHoldsItsGroup(t *testing.T, renewed bool) {
	timeout, kind := "30", ledger.DiagnosisHeldRenewed
	if !renewed {
		timeout, kind = "3600", ledger.DiagnosisHeldUnrenewed
	}
	in := newIncident(t, "hung.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": timeout})
	send := func(group string, i int) string {
		out, err := in.e.SendMessage(context.Background(), in.ref, engine.SendParams{Body: "job", GroupID: group, DedupID: "d" + strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		return out.MessageID
	}
	for i := range 5 { // 8 s handlers, one group each
		send("quick"+strconv.Itoa(i), i)
		in.at(10 * i)
		_, h := in.receiveOne()
		in.at(10*i + 8)
		in.del(h)
	}
	hung := send("orders", 10)
	send("orders", 11)
	send("orders", 12)
	in.at(100)
	if id, h := in.receiveOne(); id != hung {
		t.Fatalf("received %s, want the group's first, %s", id, hung)
	} else {
		for s := 120; renewed && s <= 700; s += 20 {
			in.at(s)
			in.change(h, 30)
		}
	}
	in.at(710)
	if got := in.receive(10, nil); len(got) != 0 {
		t.Fatalf("received %v while the group's first message is in flight", got)
	}
	r := in.report()
	expect(t, r, kind, kind)
	for _, want := range []string{hung, "On a FIFO queue a message in flight holds back its message group",
		"no later message of its group is received until its lease ends"} {
		if !strings.Contains(r.Advice, want) {
			t.Errorf("advice lacks %q: %s", want, r.Advice)
		}
	}
}
