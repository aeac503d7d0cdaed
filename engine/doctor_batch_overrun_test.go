package engine_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// The classic overrun with batch receives: 120 s handlers on a 30 s lease,
// four workers each receiving the same three messages together, each
// deleting late. Once the first came back late, and before the others do,
// their lapsed batches are no batch failing whole (a reading that would
// tell the operator to report partial batch responses): their holders may
// yet come back late, as the first did. On a standard queue and a FIFO
// one.
func TestDoctorBatchOverrunIsNoBatchFailure(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"overrun", "overrun.fifo"} {
		attrs := map[string]string{"VisibilityTimeout": "30"}
		if name == "overrun.fifo" {
			attrs["FifoQueue"], attrs["ContentBasedDeduplication"] = "true", "true"
		}
		in := newIncident(t, name, attrs)
		for i := range 3 {
			if _, err := in.e.SendMessage(context.Background(), in.ref, engine.SendParams{Body: "job " + strconv.Itoa(i), GroupID: groupOf(name, i)}); err != nil {
				t.Fatal(err)
			}
		}
		// Worker i receives at 31 × i and deletes 120 s later.
		batches := map[int]map[string]string{}
		for s := 0; s <= 220; s++ {
			in.at(s)
			if i := s / 31; s%31 == 0 && i < 4 {
				if batches[i] = in.receive(10, nil); len(batches[i]) != 3 {
					t.Fatalf("%s: receive %d got %d", name, i, len(batches[i]))
				}
			}
			if i := (s - 120) / 31; s >= 120 && (s-120)%31 == 0 && i < 4 {
				for _, h := range batches[i] {
					// Late: refused on a FIFO queue, done on a standard one.
					_ = in.e.DeleteMessage(context.Background(), in.ref, h)
				}
			}
			if s > 120 && s%10 == 0 { // once the first came back late
				r := in.report()
				if kinds(r) == nil || r.Diagnosis != ledger.DiagnosisLeaseTooShort || slices.Contains(kinds(r), ledger.DiagnosisBatchFailsWhole) {
					t.Fatalf("%s at %d s: diagnosis %s, findings %v\n%s", name, s, r.Diagnosis, kinds(r), r.Advice)
				}
			}
		}
	}
}

func groupOf(queue string, i int) string {
	if queue == "overrun.fifo" {
		return "g" + strconv.Itoa(i)
	}
	return ""
}
