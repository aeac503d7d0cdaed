package bench_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/bench"
)

func TestCompare(t *testing.T) {
	t.Parallel()
	ceiling := &bench.Result{Scenario: bench.ScenarioLifecycle, Target: "ceiling", RequestsPerSecond: 1000, MessagesPerSecond: 3333}
	target := &bench.Result{Scenario: bench.ScenarioLifecycle, Target: "baton", RequestsPerSecond: 400, MessagesPerSecond: 1333,
		Actions: map[string]bench.Summary{}}
	c := bench.Compare(ceiling, target)
	if got, want := c.RequestsRatio, 0.4; !near(got, want) {
		t.Errorf("RequestsRatio = %v, want %v", got, want)
	}
	if got, want := c.MessagesRatio, 0.4; !near(got, want) {
		t.Errorf("MessagesRatio = %v, want %v", got, want)
	}
	if got, want := c.MessagesPerCeilingRequest, 1.333; !near(got, want) {
		t.Errorf("MessagesPerCeilingRequest = %v, want %v", got, want)
	}
	if len(c.Goals) != 1 || !c.Goals[0].Met {
		t.Errorf("lifecycle goals = %+v, want one, met (1.33 >= 1)", c.Goals)
	}
	if c.CPURequestsRatio != 0 {
		t.Errorf("CPURequestsRatio = %v for servers out of process, want none", c.CPURequestsRatio)
	}

	// In process, the CPU time per request gives the same ratios.
	ceiling.InProcess, ceiling.CPUPerRequest = true, 100*time.Microsecond
	target.InProcess, target.CPUPerRequest, target.CPUPerMessage = true, 250*time.Microsecond, 75*time.Microsecond
	c = bench.Compare(ceiling, target)
	if !near(c.CPURequestsRatio, 0.4) || !near(c.CPUMessagesPerCeilingRequest, 1.333) {
		t.Errorf("CPU ratios %v and %v, want 0.4 and 1.333", c.CPURequestsRatio, c.CPUMessagesPerCeilingRequest)
	}
	if len(c.Goals) != 2 || c.Goals[1].Basis != "cpu" || !c.Goals[1].Met {
		t.Errorf("lifecycle goals in process = %+v, want the rates' and the CPU's, met", c.Goals)
	}

	send := bench.Compare(&bench.Result{Scenario: "send", RequestsPerSecond: 1000},
		&bench.Result{Scenario: "send", RequestsPerSecond: 499})
	if len(send.Goals) != 1 || send.Goals[0].Met || !near(send.Goals[0].Got, 0.499) {
		t.Errorf("send goals = %+v, want one, not met at 0.499", send.Goals)
	}

	lp := bench.Compare(nil, &bench.Result{Scenario: bench.ScenarioLongPoll, Delivery: &bench.Summary{Count: 9, P99: 5 * time.Millisecond}})
	if lp.RequestsRatio != 0 || len(lp.Goals) != 1 || !lp.Goals[0].Met {
		t.Errorf("longpoll comparison = %+v, want no ratio and the p99 goal met at exactly 5 ms", lp)
	}
	le := bench.Compare(nil, &bench.Result{Scenario: bench.ScenarioLeaseExpiry, Lateness: &bench.Summary{Count: 9, P99: 101 * time.Millisecond}})
	if len(le.Goals) != 1 || le.Goals[0].Met {
		t.Errorf("lease-expiry goals = %+v, want the 100 ms goal not met", le.Goals)
	}
}

func near(a, b float64) bool { return a-b < 1e-3 && b-a < 1e-3 }

func TestWriteText(t *testing.T) {
	t.Parallel()
	lat := bench.Summary{Count: 10, P50: 1500 * time.Microsecond, P90: 12 * time.Millisecond, P99: 250 * time.Millisecond, Max: 12 * time.Second}
	c := bench.Compare(
		&bench.Result{Scenario: "send", Target: "ceiling", Concurrency: 8, Seconds: 10, BodySize: 1024, RequestsPerSecond: 20000, MessagesPerSecond: 20000, Latency: lat,
			InProcess: true, CPUPerRequest: 50 * time.Microsecond, CPUBusy: 0.93},
		&bench.Result{Scenario: "send", Target: "baton/memory", Concurrency: 8, Seconds: 10, BodySize: 1024, RequestsPerSecond: 12345.6,
			MessagesPerSecond: 12345.6, Latency: lat, ErrorCount: 3, Errors: map[string]uint64{"QueueDoesNotExist": 3}, Notes: []string{"a note"},
			InProcess: true, CPUPerRequest: 80 * time.Microsecond, CPUPerMessage: 80 * time.Microsecond, CPUBusy: 0.654},
	)
	var b strings.Builder
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"send: 8 workers, 10.0s measured, 1024-byte bodies",
		"20,000", "12,346", "1.50ms", "12.0ms", "250ms", "12.0s",
		"baton/memory / ceiling: requests 0.62",
		"goal (rates): requests/s as a fraction of the ceiling's >= 0.50: 0.62, met",
		"CPU of this process (client and server) per request: ceiling 50.0µs, baton/memory 80.0µs (per message 80.0µs): requests 0.62",
		"goal (cpu): requests/s as a fraction of the ceiling's >= 0.50: 0.62, met",
		"CPUs busy: ceiling 93%, baton/memory 65%",
		"errors (baton/memory): QueueDoesNotExist 3;",
		"note (baton/memory): a note",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
}

func TestProgressLine(t *testing.T) {
	t.Parallel()
	p := bench.Progress{Scenario: "send", Target: "baton", Elapsed: 3 * time.Second, Warmup: true,
		RequestsPerSecond: 1234567, MessagesPerSecond: 1, Errors: 2}
	if got, want := p.ProgressLine(), "send baton    3s (warm-up)  1,234,567 req/s  1 msg/s  2 errors"; got != want {
		t.Errorf("ProgressLine = %q, want %q", got, want)
	}
}

// CPUBusy is the process's CPU time over the CPUs it may use for the
// window, also when rounds are merged.
func TestCPUBusy(t *testing.T) {
	t.Parallel()
	half := time.Duration(float64(time.Second) * float64(runtime.GOMAXPROCS(0)) / 2)
	m := bench.MergeResults(
		&bench.Result{Scenario: "send", Target: "t", Seconds: 1, Requests: 10, ProcessCPU: half},
		&bench.Result{Scenario: "send", Target: "t", Seconds: 1, Requests: 10, ProcessCPU: 0},
	)
	if !near(m.CPUBusy, 0.25) {
		t.Errorf("CPUBusy of a round half busy and one idle = %v, want 0.25", m.CPUBusy)
	}
}
