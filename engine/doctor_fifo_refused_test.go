package engine_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// A late delete on a FIFO queue is refused, as on SQS: the message is not
// deleted and runs again, so its lease did not complete, and neither the
// completed count nor /metrics' deletes count it. But its handler had
// finished, 90 s after the receive: the p99 the timeout is sized from, and
// the lease-duration histogram, count how long it ran. On a standard queue
// the same late deletes delete, and complete their leases.
func TestDoctorFifoRefusedLateDelete(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"slow.fifo", "slow"} {
		attrs := map[string]string{"VisibilityTimeout": "30"}
		fifo := name == "slow.fifo"
		if fifo {
			attrs["FifoQueue"], attrs["ContentBasedDeduplication"] = "true", "true"
		}
		in := newIncident(t, name, attrs)
		sendN := func(prefix string, n int) {
			for i := range n {
				group := ""
				if fifo {
					group = prefix + strconv.Itoa(i)
				}
				if _, err := in.e.SendMessage(context.Background(), in.ref, engine.SendParams{Body: prefix + strconv.Itoa(i), GroupID: group}); err != nil {
					t.Fatal(err)
				}
			}
		}
		sendN("quick", 5)
		quick := in.receive(10, nil)
		in.at(1)
		for _, h := range quick {
			in.del(h)
		}
		sendN("slow", 3)
		in.at(2)
		slow := in.receive(10, nil)
		in.at(92)
		for _, h := range slow {
			err := in.e.DeleteMessage(context.Background(), in.ref, h)
			if fifo == (err == nil) {
				t.Fatalf("%s: late delete: %v", name, err)
			}
		}
		in.at(95)
		r := in.report()
		completed, refused := uint64(8), uint64(0)
		if fifo {
			completed, refused = 5, 3
		}
		s := r.Window
		if s.Completed != completed || s.RefusedDeletes != refused || s.Finished() != 8 || s.P99 < 89*time.Second || s.Late != 3 {
			t.Errorf("%s: completed %d, refused %d, p99 %v, late %d; want %d, %d, about 90 s, 3", name, s.Completed, s.RefusedDeletes, s.P99, s.Late, completed, refused)
		}
		expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
		if r.RecommendedVisibilityTimeout < 135 {
			t.Errorf("%s: recommended %d s, want the 90 s handlers × 1.5", name, r.RecommendedVisibilityTimeout)
		}
		if fifo {
			contains(t, r.Advice, "3 late deletes were refused, as a FIFO queue refuses the receipt of a lapsed lease: their messages were not deleted and run again")
		} else if strings.Contains(r.Advice, "refused") {
			t.Errorf("%s: refusal said where none happened: %s", name, r.Advice)
		}
		qs, err := in.e.QueueMetrics(context.Background())
		if err != nil || len(qs) != 1 {
			t.Fatal(qs, err)
		}
		m := qs[0]
		if m.Totals.Completed != completed || m.Totals.Finished() != 8 || m.LeaseDurations[len(m.LeaseDurations)-1] != 8 {
			t.Errorf("%s: metrics completed %d, finished %d, histogram %v; want %d, 8, 8", name, m.Totals.Completed, m.Totals.Finished(), m.LeaseDurations, completed)
		}
	}
}

// A FIFO queue refuses a delete by the receipt of a lease its holder
// released: the message stays, and its history shows no delete.
func TestHistoryFifoRefusedDeleteAfterRelease(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "released.fifo", map[string]string{"VisibilityTimeout": "30", "FifoQueue": "true", "ContentBasedDeduplication": "true"})
	if _, err := in.e.SendMessage(context.Background(), in.ref, engine.SendParams{Body: "x", GroupID: "g"}); err != nil {
		t.Fatal(err)
	}
	id, h := in.receiveOne()
	in.at(1)
	in.change(h, 0)
	in.at(2)
	if err := in.e.DeleteMessage(context.Background(), in.ref, h); err == nil {
		t.Fatal("a FIFO queue deleted by the receipt of a released lease")
	}
	events, ok, err := in.e.MessageHistory(context.Background(), in.ref, id)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	var got []string
	for _, ev := range events {
		got = append(got, ev.Kind)
	}
	if want := []string{ledger.EventReceive, ledger.EventRelease}; !slices.Equal(got, want) {
		t.Errorf("history %v, want %v: the refused delete deleted nothing", got, want)
	}
}
