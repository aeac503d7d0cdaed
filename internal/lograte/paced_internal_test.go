package lograte

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// pacedLines records what a Paced wrote: "line held since" and "count
// held since", since as seconds after start.
type pacedLines struct {
	start time.Time
	mu    sync.Mutex
	lines []string
}

func (r *pacedLines) write(what string) func(int, time.Time) {
	return func(held int, since time.Time) {
		at := 0.0
		if !since.IsZero() {
			at = since.Sub(r.start).Seconds()
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.lines = append(r.lines, fmt.Sprintf("%s %d since %g", what, held, at))
	}
}

func (r *pacedLines) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "; ")
}

// pacedRig is a Paced of a 10 s interval on a fake clock from start,
// closed with the test, and the record of its lines.
func pacedRig(t *testing.T) (start time.Time, fake *clock.Fake, p *Paced, r *pacedLines) {
	start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fake = clock.NewFake(start)
	p = NewPaced(fake, 10*time.Second)
	t.Cleanup(p.Close)
	return start, fake, p, &pacedLines{start: start}
}

// note is Note of kind "a" with lines recorded in r.
func (r *pacedLines) note(p *Paced) { p.Note("a", r.write("line"), r.write("count")) }

// want waits until r holds want, failing the test if it does not within
// 30 s.
func (r *pacedLines) want(t *testing.T, want string) {
	t.Helper()
	poll.For(t, 30*time.Second, func() error {
		if got := r.String(); got != want {
			return fmt.Errorf("lines %q; want %q", got, want)
		}
		return nil
	})
}

// waitDeadline waits until a timer of fake is pending for at.
func waitDeadline(t *testing.T, fake *clock.Fake, at time.Time) {
	t.Helper()
	poll.For(t, 30*time.Second, func() error {
		if next, ok := fake.NextDeadline(); !ok || !next.Equal(at) {
			return fmt.Errorf("next timer at %v (pending %v); want %v", next, ok, at)
		}
		return nil
	})
}

// A burst held back within the interval is counted once the interval
// after the line before it has passed, with no line of its kind after
// it; the count's line starts an interval of its own. A Limiter alone
// leaves the count unsaid until the next line of the kind.
func TestPacedSaysABurstsCountWhenTheIntervalEnds(t *testing.T) {
	start, fake, p, r := pacedRig(t)
	r.note(p)
	for range 5 { // a burst of 5 in 3 s, then nothing
		fake.Advance(600 * time.Millisecond)
		r.note(p)
	}
	r.want(t, "line 0 since 0")
	waitDeadline(t, fake, start.Add(10*time.Second))
	fake.Set(start.Add(10 * time.Second))
	r.want(t, "line 0 since 0; count 5 since 0")
	fake.Advance(time.Second)
	r.note(p) // within the interval after the count's line
	waitDeadline(t, fake, start.Add(20*time.Second))
	fake.Set(start.Add(20 * time.Second))
	r.want(t, "line 0 since 0; count 5 since 0; count 1 since 10")
	fake.Advance(time.Hour)
	r.note(p)
	r.want(t, "line 0 since 0; count 5 since 0; count 1 since 10; line 0 since 0")
}

// A count due after a Forget waits for the interval of the line written
// since, not the one before the Forget; the lines held back before it are
// not counted.
func TestPacedForget(t *testing.T) {
	start, fake, p, r := pacedRig(t)
	r.note(p)
	fake.Advance(time.Second)
	r.note(p) // held back, then forgotten
	waitDeadline(t, fake, start.Add(10*time.Second))
	p.Forget("a")
	fake.Set(start.Add(5 * time.Second))
	r.note(p)
	fake.Advance(time.Second)
	r.note(p) // held back, counted at 15 s
	fake.Set(start.Add(10 * time.Second))
	waitDeadline(t, fake, start.Add(15*time.Second))
	r.want(t, "line 0 since 0; line 0 since 0")
	fake.Set(start.Add(15 * time.Second))
	r.want(t, "line 0 since 0; line 0 since 0; count 1 since 5")
}

// End says the count of the lines held back at once, before it returns,
// and the next line of the kind is written at once, counting none; the
// count is not said again.
func TestPacedEnd(t *testing.T) {
	start, fake, p, r := pacedRig(t)
	r.note(p)
	fake.Advance(time.Second)
	r.note(p)
	r.note(p)
	fake.Advance(time.Second)
	p.End("a", r.write("end"))
	if got, want := r.String(), "line 0 since 0; end 2 since 0"; got != want {
		t.Fatalf("after End: lines %q; want %q", got, want)
	}
	p.End("a", r.write("end")) // nothing more to say
	r.note(p)
	fake.Set(start.Add(10 * time.Second))
	p.Close() // no count due: none said
	if got, want := r.String(), "line 0 since 0; end 2 since 0; line 0 since 0"; got != want {
		t.Fatalf("after End and a line: lines %q; want %q", got, want)
	}
}

// Close says the counts due at once, before it returns; lines held back
// after it start nothing, to be counted by the next line of their kind.
func TestPacedClose(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fake := clock.NewFake(start)
	p := NewPaced(fake, 10*time.Second)
	r := &pacedLines{start: start}
	r.note(p)
	r.note(p)
	r.note(p)
	p.Close()
	if got, want := r.String(), "line 0 since 0; count 2 since 0"; got != want {
		t.Fatalf("after Close: lines %q; want %q", got, want)
	}
	r.note(p)
	if n := fake.Timers(); n != 0 {
		t.Errorf("a line held back after Close left %d timers pending; want none", n)
	}
	fake.Advance(10 * time.Second)
	r.note(p)
	if got, want := r.String(), "line 0 since 0; count 2 since 0; line 1 since 0"; got != want {
		t.Errorf("lines %q; want %q", got, want)
	}
}

// A nil Paced writes every line.
func TestNilPacedWritesEveryLine(t *testing.T) {
	var p *Paced
	r := &pacedLines{}
	r.note(p)
	r.note(p)
	p.Forget("a")
	p.Close()
	if got, want := r.String(), "line 0 since 0; line 0 since 0"; got != want {
		t.Errorf("lines %q; want %q", got, want)
	}
}

// Kinds that may name a client (one per address) do not pile up in a
// Paced either: a kind whose count was said is not kept. It was, one entry
// per kind for the Paced's life.
func TestPacedKindsDoNotPileUp(t *testing.T) {
	start, fake, p, r := pacedRig(t)
	for i := range 100 {
		key := fmt.Sprint("client 10.0.0.", i)
		p.Note(key, r.write("line"), r.write("count"))
		p.Note(key, r.write("line"), r.write("count"))
	}
	poll.For(t, 30*time.Second, func() error { // every kind's count waits for its interval's end
		if n := fake.Timers(); n != 100 {
			return fmt.Errorf("%d timers pending, want 100", n)
		}
		return nil
	})
	fake.Set(start.Add(10 * time.Second))
	poll.For(t, 30*time.Second, func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if n := len(p.tails); n != 0 {
			return fmt.Errorf("%d kinds kept once their counts were said, want none", n)
		}
		return nil
	})
}
