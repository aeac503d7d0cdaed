package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Comparison is one scenario measured in one run against the ceiling (if
// it has one) and against the server under test.
type Comparison struct {
	Scenario string  `json:"scenario"`
	Ceiling  *Result `json:"ceiling,omitempty"`
	Target   *Result `json:"target"`
	// RequestsRatio is the target's requests/s over the ceiling's.
	RequestsRatio float64 `json:"requests_ratio,omitempty"`
	// MessagesRatio is the target's messages/s over the ceiling's.
	MessagesRatio float64 `json:"messages_ratio,omitempty"`
	// MessagesPerCeilingRequest is the target's messages/s over the
	// ceiling's requests/s: a batching server can beat 1.
	MessagesPerCeilingRequest float64 `json:"messages_per_ceiling_request,omitempty"`
	// CPURequestsRatio and CPUMessagesPerCeilingRequest are the same two
	// ratios computed from this process's CPU time per request (and per
	// message) instead of from the rates, when both servers ran in this
	// process. A rate falls when other programs take the CPU; the CPU a
	// request costs hardly changes, so on a busy machine these are the
	// steadier estimate of what the rates' ratios are on an idle one.
	CPURequestsRatio             float64 `json:"cpu_requests_ratio,omitempty"`
	CPUMessagesPerCeilingRequest float64 `json:"cpu_messages_per_ceiling_request,omitempty"`
	// Goals are the performance targets that apply, checked.
	Goals []Goal `json:"goals,omitempty"`
}

// Goal is one performance target and whether the run met it.
type Goal struct {
	// Basis is what the figure is computed from: "rates", or "cpu" for
	// the CPU-time ratios.
	Basis string  `json:"basis"`
	What  string  `json:"what"`
	Want  string  `json:"want"`
	Got   float64 `json:"got"`
	Met   bool    `json:"met"`
}

// Compare builds the comparison of target against ceiling (nil when the
// scenario has none) and checks the targets that apply to the scenario.
func Compare(ceiling, target *Result) *Comparison {
	c := &Comparison{Scenario: target.Scenario, Ceiling: ceiling, Target: target}
	if ceiling != nil && ceiling.RequestsPerSecond > 0 {
		c.RequestsRatio = target.RequestsPerSecond / ceiling.RequestsPerSecond
		c.MessagesPerCeilingRequest = target.MessagesPerSecond / ceiling.RequestsPerSecond
		if ceiling.MessagesPerSecond > 0 {
			c.MessagesRatio = target.MessagesPerSecond / ceiling.MessagesPerSecond
		}
	}
	cpu := ceiling != nil && ceiling.InProcess && target.InProcess && ceiling.CPUPerRequest > 0 && target.CPUPerRequest > 0
	if cpu {
		c.CPURequestsRatio = float64(ceiling.CPUPerRequest) / float64(target.CPUPerRequest)
		if target.CPUPerMessage > 0 {
			c.CPUMessagesPerCeilingRequest = float64(ceiling.CPUPerRequest) / float64(target.CPUPerMessage)
		}
	}
	switch {
	case target.Scenario == ScenarioSend && ceiling != nil:
		const what, want = "requests/s as a fraction of the ceiling's", ">= 0.50"
		c.Goals = append(c.Goals, Goal{Basis: "rates", What: what, Want: want, Got: c.RequestsRatio, Met: c.RequestsRatio >= 0.5})
		if cpu {
			c.Goals = append(c.Goals, Goal{Basis: "cpu", What: what, Want: want, Got: c.CPURequestsRatio, Met: c.CPURequestsRatio >= 0.5})
		}
	case target.Scenario == ScenarioLifecycle && ceiling != nil:
		const what, want = "messages/s over the ceiling's requests/s", ">= 1.00"
		c.Goals = append(c.Goals, Goal{Basis: "rates", What: what, Want: want, Got: c.MessagesPerCeilingRequest, Met: c.MessagesPerCeilingRequest >= 1})
		if cpu {
			c.Goals = append(c.Goals, Goal{Basis: "cpu", What: what, Want: want, Got: c.CPUMessagesPerCeilingRequest,
				Met: c.CPUMessagesPerCeilingRequest >= 1})
		}
	case target.Scenario == ScenarioLongPoll && target.Delivery != nil && target.Delivery.Count > 0:
		p99 := target.Delivery.P99
		c.Goals = append(c.Goals, Goal{Basis: "latency", What: "delivery p99 in ms", Want: "<= 5", Got: ms(p99), Met: p99 <= 5*time.Millisecond})
	case target.Scenario == ScenarioLeaseExpiry && target.Lateness != nil && target.Lateness.Count > 0:
		p99 := target.Lateness.P99
		c.Goals = append(c.Goals, Goal{Basis: "latency", What: "redelivery lateness p99 in ms", Want: "<= 100", Got: ms(p99),
			Met: p99 <= 100*time.Millisecond})
	}
	return c
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// WriteText writes c as a small table: one line per target, then ratios,
// the scenario's own latency, errors and notes.
func (c *Comparison) WriteText(w io.Writer) error {
	t := c.Target
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d workers, %.1fs measured, %d-byte bodies\n", c.Scenario, t.Concurrency, t.Seconds, t.BodySize)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  \ttarget\treq/s\tmsg/s\tp50\tp90\tp99\tmax\terrors\t")
	row := func(r *Result) {
		fmt.Fprintf(tw, "  \t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", r.Target, count(r.RequestsPerSecond), count(r.MessagesPerSecond),
			Dur(r.Latency.P50), Dur(r.Latency.P90), Dur(r.Latency.P99), Dur(r.Latency.Max), r.ErrorCount)
	}
	if c.Ceiling != nil {
		row(c.Ceiling)
	}
	row(t)
	tw.Flush()
	if c.Ceiling != nil {
		fmt.Fprintf(&b, "  %s / %s: requests %.2f, messages %.2f, messages per ceiling request %.2f\n",
			t.Target, c.Ceiling.Target, c.RequestsRatio, c.MessagesRatio, c.MessagesPerCeilingRequest)
	}
	if c.CPURequestsRatio > 0 {
		fmt.Fprintf(&b, "  CPU of this process (client and server) per request: %s %s, %s %s (per message %s): "+
			"requests %.2f, messages per ceiling request %.2f\n",
			c.Ceiling.Target, micros(c.Ceiling.CPUPerRequest), t.Target, micros(t.CPUPerRequest), micros(t.CPUPerMessage),
			c.CPURequestsRatio, c.CPUMessagesPerCeilingRequest)
		fmt.Fprintf(&b, "  CPUs busy: %s %.0f%%, %s %.0f%% (the rest idle: waiting, on the disk or the network)\n",
			c.Ceiling.Target, 100*c.Ceiling.CPUBusy, t.Target, 100*t.CPUBusy)
	}
	if len(t.Actions) > 1 {
		b.WriteString("  by action:")
		for _, a := range sortedKeys(t.Actions) {
			s := t.Actions[a]
			fmt.Fprintf(&b, "  %s p50 %s p99 %s;", a, Dur(s.P50), Dur(s.P99))
		}
		b.WriteString("\n")
	}
	if s := t.Delivery; s != nil {
		fmt.Fprintf(&b, "  delivery (send's response to the waiting receiver's response): n %d  p50 %s  p90 %s  p99 %s  max %s\n",
			s.Count, Dur(s.P50), Dur(s.P90), Dur(s.P99), Dur(s.Max))
	}
	if s := t.EndToEnd; s != nil {
		fmt.Fprintf(&b, "  end to end (send's request to the waiting receiver's response): n %d  p50 %s  p90 %s  p99 %s  max %s\n",
			s.Count, Dur(s.P50), Dur(s.P90), Dur(s.P99), Dur(s.Max))
	}
	if s := t.Lateness; s != nil {
		fmt.Fprintf(&b, "  redelivery after the lease's deadline (upper bound): n %d  p50 %s  p90 %s  p99 %s  max %s\n",
			s.Count, Dur(s.P50), Dur(s.P90), Dur(s.P99), Dur(s.Max))
	}
	for _, g := range c.Goals {
		verdict := "met"
		if !g.Met {
			verdict = "NOT met"
		}
		fmt.Fprintf(&b, "  goal (%s): %s %s: %.2f, %s\n", g.Basis, g.What, g.Want, g.Got, verdict)
	}
	for _, r := range []*Result{c.Ceiling, t} {
		if r == nil || len(r.Errors) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  errors (%s):", r.Target)
		for _, code := range sortedKeys(r.Errors) {
			fmt.Fprintf(&b, " %s %d;", code, r.Errors[code])
		}
		b.WriteString("\n")
	}
	for _, r := range []*Result{c.Ceiling, t} {
		if r == nil {
			continue
		}
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  note (%s): %s\n", r.Target, n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// micros renders a CPU time in microseconds.
func micros(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 1, 64) + "µs"
}

// count renders a rate as a whole number with thousands separators.
func count(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// Dur renders a latency in milliseconds with three significant digits or
// so, or in seconds from 10 s.
func Dur(d time.Duration) string {
	m := ms(d)
	switch {
	case d >= 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case m >= 100:
		return strconv.FormatFloat(m, 'f', 0, 64) + "ms"
	case m >= 10:
		return strconv.FormatFloat(m, 'f', 1, 64) + "ms"
	}
	return strconv.FormatFloat(m, 'f', 2, 64) + "ms"
}

// ProgressLine renders p as the one-line live status.
func (p Progress) ProgressLine() string {
	phase := ""
	if p.Warmup {
		phase = " (warm-up)"
	}
	return fmt.Sprintf("%s %s %4.0fs%s  %s req/s  %s msg/s  %d errors", p.Scenario, p.Target, p.Elapsed.Seconds(), phase,
		count(p.RequestsPerSecond), count(p.MessagesPerSecond), p.Errors)
}
