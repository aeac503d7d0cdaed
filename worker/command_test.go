package worker_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/worker"
)

// extractID is shell that prints the messageId of the record whose body is
// $b in $event (records are one a line once split at '{'; a record's id
// comes before its body).
const extractID = `printf '%s' "$event" | tr '{' '\n' | grep '^"messageId"' | grep "\"body\":\"$b\"" | sed 's/^"messageId":"\([^"]*\)".*/\1/'`

// A command target: the event on standard input, the answer on standard
// output, the exit status. Its first run answers as the case says; later
// runs succeed.
func TestCommandResults(t *testing.T) {
	t.Parallel()
	all := numbered("m", 10)
	tests := []struct {
		name  string
		first string // shell run on the first event
		back  []string
	}{
		{"two reported failures", `ids=""
for b in m2 m7; do id=$(` + extractID + `); ids="$ids{\"itemIdentifier\":\"$id\"},"; done
printf '{"batchItemFailures":[%s]}' "${ids%,}"`, []string{"m2", "m7"}},
		{"malformed answer", `echo '{"batchItemFailures": [{"itemIdentifier": '`, all},
		{"unknown id", `echo '{"batchItemFailures":[{"itemIdentifier":"nope"}]}'`, all},
		{"exit status 3", `echo '{"batchItemFailures":[]}'; exit 3`, all},
		{"empty answer", `:`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
			w.send(url, all...)
			cmd, dir := script(t, `event=$(cat)
printf '%s\n' "$event" >> "$STATE/events"
[ -e "$STATE/answered" ] && exit 0
touch "$STATE/answered"
`+tt.first+"\n")
			w.start(worker.Config{QueueURL: url, Target: &worker.CommandTarget{Command: cmd}, ReportBatchItemFailures: true})
			w.drivePrompt(time.Minute, step, w.empty(url))
			events := readEvents(t, filepath.Join(dir, "events"))
			if len(events) == 0 || len(events[0].Records) != 10 {
				t.Fatalf("events %v, want a first one of ten", events)
			}
			rec := &received{events: events}
			if got := rec.redelivered(); !reflect.DeepEqual(got, tt.back) {
				t.Errorf("redelivered %v, want %v", got, tt.back)
			}
		})
	}
}

// A command that works for four lease lengths and reports progress on
// file descriptor 3 keeps its leases: one run, no redelivery.
func TestLongCommandKeepsLeases(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "3"})
	w.send(url, numbered("m", 5)...)
	cmd, dir := script(t, `event=$(cat)
printf '%s\n' "$event" >> "$STATE/events"
[ "$BATON_PROGRESS_FD" = 3 ] || exit 9
while [ ! -e "$STATE/done" ]; do echo working >&3; echo . >> "$STATE/ticks"; sleep 0.01; done
`)
	w.start(worker.Config{QueueURL: url, TargetTimeout: time.Minute,
		Target: &worker.CommandTarget{Command: cmd, StallTimeout: 2 * time.Second}})
	ticks := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "ticks"))
		return len(b)
	}
	// Wait for the command to start without moving fake time: starting a
	// shell takes real time, and fake seconds passing meanwhile would let
	// the 3 s leases lapse before the command could show progress.
	checkFor(t, func() error {
		if ticks() == 0 {
			return errors.New("not running yet")
		}
		return nil
	})
	start := w.clock.Now()
	for w.clock.Now().Sub(start) < 12*time.Second {
		// Each step of fake time waits for a progress line in real time,
		// so the command shows life in every stall window.
		before := ticks()
		checkFor(t, func() error {
			if ticks() <= before+1 {
				return errors.New("no progress line yet")
			}
			return nil
		})
		w.settle()
		w.srv.Clock().Advance(500 * time.Millisecond)
	}
	if v, f := w.counts(url); v != 0 || f != 5 {
		t.Errorf("after 12 s on 3 s leases: %d visible, %d in flight; want 0, 5", v, f)
	}
	if err := os.WriteFile(filepath.Join(dir, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w.drivePrompt(time.Minute, step, w.empty(url))
	events := readEvents(t, filepath.Join(dir, "events"))
	if len(events) != 1 || strings.Join(receiveCounts(events[0]), "") != "11111" {
		t.Errorf("runs %d (receive counts %v), want one run of first deliveries", len(events), receiveCounts(events[0]))
	}
	for _, k := range []consumer.EventKind{consumer.EventLeaseLost, consumer.EventStalled} {
		if n := w.obs.Count(k); n != 0 {
			t.Errorf("%v events %d, want 0", k, n)
		}
	}
}

// A command that stops reporting progress is stalled: its process group
// gets SIGTERM, and SIGKILL after the grace since it ignores SIGTERM; the
// batch is released with backoff and retried. The retry, which takes a
// moment of real time and no progress line, succeeds: fake time does not
// pass under it.
func TestStalledCommandKilled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		target func(cmd string) *worker.CommandTarget
		// when the SIGTERM comes, in fake time after the start
		termAfter time.Duration
		why       error
	}{
		{"stalled", func(cmd string) *worker.CommandTarget {
			return &worker.CommandTarget{Command: cmd, StallTimeout: 2 * time.Second, KillGrace: time.Second}
		}, 2 * time.Second, worker.ErrStalled},
		{"timed out", func(cmd string) *worker.CommandTarget {
			return &worker.CommandTarget{Command: cmd, KillGrace: time.Second}
		}, 4 * time.Second, worker.ErrTargetTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			url := w.queue("jobs", map[string]string{"VisibilityTimeout": "3"})
			w.send(url, numbered("m", 3)...)
			cmd, dir := script(t, `event=$(cat)
printf '%s\n' "$event" >> "$STATE/events"
[ -e "$STATE/pid" ] && { sleep 0.5; exit 0; }
trap 'echo TERM >> "$STATE/term"' TERM
sleep 60 &
echo "$! $$" > "$STATE/pid"
while :; do sleep 0.02; done
`)
			t0 := w.clock.Now()
			w.start(worker.Config{QueueURL: url, TargetTimeout: 4 * time.Second, Target: tt.target(cmd)})
			var shell, child int
			exists := func(p string) bool { _, err := os.Stat(filepath.Join(dir, p)); return err == nil }
			// The messages are there: the command starts at t0, the clock
			// still.
			checkFor(t, func() error {
				b, err := os.ReadFile(filepath.Join(dir, "pid"))
				if err != nil || !strings.HasSuffix(string(b), "\n") {
					return errors.New("not started yet")
				}
				fmt.Sscan(string(b), &child, &shell)
				return nil
			})
			// Fake time runs up to the SIGTERM's time (or an early SIGTERM),
			// then stands still while the shell, in real time, runs its
			// trap: however slowly it does, the SIGTERM was due then.
			w.drive(10*time.Second, step, func() error {
				if !exists("term") && w.clock.Now().Sub(t0) < tt.termAfter {
					return errors.New("no SIGTERM yet")
				}
				return nil
			})
			checkFor(t, func() error {
				if !exists("term") {
					return fmt.Errorf("no SIGTERM %v after the start", w.clock.Now().Sub(t0))
				}
				return nil
			})
			if at := w.clock.Now().Sub(t0); at != tt.termAfter {
				t.Errorf("SIGTERM %v after the start, want %v", at, tt.termAfter)
			}
			if !alive(shell) {
				t.Fatalf("the command died at SIGTERM; it ignores it")
			}
			// The stall or timeout timer started with the command, at t0.
			// The same for the SIGKILL, due a grace after the SIGTERM.
			termAt := t0.Add(tt.termAfter)
			gone := func() error {
				if alive(shell) || alive(child) {
					return fmt.Errorf("%v after SIGTERM: shell %d alive %v, its child %d alive %v",
						w.clock.Now().Sub(termAt), shell, alive(shell), child, alive(child))
				}
				return nil
			}
			w.drive(10*time.Second, step, func() error {
				if err := gone(); err != nil && w.clock.Now().Sub(termAt) < time.Second {
					return err
				}
				return nil
			})
			checkFor(t, gone)
			if killed := w.clock.Now().Sub(termAt); killed < time.Second {
				t.Errorf("SIGKILL %v after SIGTERM, want the 1 s grace", killed)
			}
			// The retry ends by itself, after half a second of real time,
			// as a slow start on a busy machine would: no fake time passes
			// while it runs, or it would stall too.
			w.drivePrompt(time.Minute, step, w.empty(url))
			events := readEvents(t, filepath.Join(dir, "events"))
			if len(events) != 2 || strings.Join(receiveCounts(events[1]), "") != "222" {
				t.Errorf("runs %d, want 2 (killed, retried with receive count 2)", len(events))
			}
			var handled []consumer.Event
			for _, e := range w.obs.All(consumer.EventHandled) {
				if e.Err != nil {
					handled = append(handled, e)
				}
			}
			if len(handled) != 3 || !errors.Is(handled[0].Err, tt.why) {
				t.Errorf("failed results %v, want three with %v", handled, tt.why)
			}
			releases := w.obs.All(consumer.EventReleased)
			if len(releases) != 3 || releases[0].Delay != backoff {
				t.Errorf("releases %v, want three with the %v backoff", releases, backoff)
			}
		})
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// checkFor polls cond in real time (bounded).
func checkFor(t *testing.T, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after 10s: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// A command that exits 0 but leaves a background process in its process
// group: the process gets SIGKILL once the command has exited, and the
// delivery does not wait KillGrace for the output it holds open.
func TestCommandLeftoversKilled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	w.send(url, "m0")
	cmd, dir := script(t, `cat > /dev/null; sleep 30 & echo $! > "$STATE/bg"; exit 0`)
	const grace = 5 * time.Second
	w.start(worker.Config{QueueURL: url, Target: &worker.CommandTarget{Command: cmd, KillGrace: grace}})
	// The clock stands still while the command runs, in real time, to its
	// exit: its leftover must go then, not after a grace of fake time.
	var pid int
	checkFor(t, func() error {
		b, err := os.ReadFile(filepath.Join(dir, "bg"))
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return errors.New("the command has not started its background process yet")
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return nil
	})
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	checkFor(t, func() error {
		if alive(pid) {
			return fmt.Errorf("the command's background process %d still runs: the command's exit did not end it", pid)
		}
		return nil
	})
	// Its delivery ends with the clock still: it does not wait KillGrace
	// for the output the leftover held open.
	w.awaitDeliveries()
	w.drive(time.Minute, step, w.empty(url))
}
