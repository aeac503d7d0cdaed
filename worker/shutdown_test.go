package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/worker"
)

// shutdownSoon is a shutdown deadline that leaves the drain a moment
// before the tests' 2 s shutdown reserve.
func shutdownSoon() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2300*time.Millisecond)
}

// Shutdown in the middle of a batch: the target is cancelled when the
// drain ends, every lease is released at once (no fake time passes), and
// the messages come back with nothing lost.
func TestShutdownMidBatchReleases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		target func(t *testing.T, w *world) (worker.Target, func() bool)
	}{
		{"http", func(t *testing.T, w *world) (worker.Target, func() bool) {
			rec, url := w.httpTarget(func(n int, e event, r *http.Request) (int, http.Header, string) {
				<-r.Context().Done() // works until the worker gives up on it
				return http.StatusOK, nil, ""
			})
			return &worker.HTTPTarget{URL: url}, func() bool { return rec.n() == 1 }
		}},
		{"command", func(t *testing.T, w *world) (worker.Target, func() bool) {
			cmd, dir := script(t, `cat > /dev/null; echo $$ > "$STATE/pid"; while :; do sleep 0.02; done`)
			return &worker.CommandTarget{Command: cmd}, func() bool {
				b, err := os.ReadFile(filepath.Join(dir, "pid"))
				return err == nil && strings.HasSuffix(string(b), "\n")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
			w.send(url, numbered("m", 5)...)
			target, working := tt.target(t, w)
			log := &logbuf.Buffer{}
			wk := w.start(worker.Config{QueueURL: url, Target: target, Logger: slog.New(slog.NewTextHandler(log, nil))})
			checkFor(t, func() error {
				if !working() {
					return errors.New("the target has not started")
				}
				return nil
			})
			before := w.clock.Now()
			ctx, cancel := shutdownSoon()
			defer cancel()
			r := wk.Shutdown(ctx)
			if moved := w.clock.Now().Sub(before); moved != 0 {
				t.Errorf("fake clock moved %v", moved)
			}
			if r.Released != 5 || r.ReleaseFailed != 0 || r.Cancelled != 1 || r.Stuck != 0 {
				t.Errorf("report %+v, want 5 released, 1 cancelled, none stuck", r)
			}
			// The stop says what it waits for, and counts what it did.
			for _, want := range []string{"msg=\"worker stopping: the batches still gathering are delivered now; running deliveries may finish during the drain, then are cancelled",
				"running_deliveries=1", "msg=\"worker stopped\" queue=jobs batches_delivered=1 messages_delivered=5 messages_failed=5 released=5"} {
				if !strings.Contains(log.String(), want) {
					t.Errorf("no %q in the log:\n%s", want, log.String())
				}
			}
			// The cancelled delivery says what becomes of its batch: released
			// at once, not after a backoff.
			if want := `msg="delivery failed: stopped by the shutdown: the batch is to be released at once (the stop line counts the releases)"`; !strings.Contains(log.String(), want) ||
				strings.Contains(log.String(), "after a backoff") {
				t.Errorf("want %q, and no backoff, in the log:\n%s", want, log.String())
			}
			if v, f := w.counts(url); v != 5 || f != 0 {
				t.Errorf("after shutdown: %d visible, %d in flight; want 5, 0", v, f)
			}
			out, err := w.srv.Client().ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10,
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range out.Messages {
				got = append(got, *m.Body+":"+m.Attributes["ApproximateReceiveCount"])
			}
			sort.Strings(got)
			if fmt.Sprint(got) != "[m0:2 m1:2 m2:2 m3:2 m4:2]" {
				t.Errorf("after shutdown the queue gives %v, want m0..m4 once delivered", got)
			}
			for _, e := range w.obs.All(consumer.EventReleased) {
				if e.Reason != consumer.ReasonShutdown || e.Delay != 0 {
					t.Errorf("release %+v, want a shutdown release without delay", e)
				}
			}
		})
	}
}

// Shutdown while a batch gathers in its window: the batch is delivered at
// once instead of waiting for the window, and its deletes are flushed.
func TestShutdownDeliversGatheringBatch(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	w.send(url, numbered("m", 5)...)
	rec, target := w.httpTarget(ok)
	wk := w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, BatchSize: 100, BatchingWindow: time.Minute})
	// Renewed leases are held by the worker (a receive that answers after
	// the stop is released by the consumer at once, never delivered).
	w.drive(40*time.Second, 500*time.Millisecond, func() error {
		if n := w.obs.Count(consumer.EventRenewed); n < 5 {
			return fmt.Errorf("%d renewals, want the 5 leases renewed", n)
		}
		return nil
	})
	if n := rec.n(); n != 0 {
		t.Fatalf("%d deliveries before the window ended", n)
	}
	ctx, cancel := shutdownSoon()
	defer cancel()
	r := wk.Shutdown(ctx)
	if rec.n() != 1 || len(rec.get(0).Records) != 5 {
		t.Fatalf("deliveries %d, want the gathered 5 in one", rec.n())
	}
	if r.Released != 0 || r.Cancelled != 0 {
		t.Errorf("report %+v, want the batch drained, nothing released", r)
	}
	if v, f := w.counts(url); v+f != 0 {
		t.Errorf("after shutdown: %d visible, %d in flight; want an empty queue", v, f)
	}
}

// A command that ignores SIGTERM when the shutdown deadline is nearer than
// its kill grace: it gets SIGKILL while the release margin is left, so that
// Run returns with the command gone and its message released, not running
// on in its own process group with its lease stranded.
func TestShutdownKillsCommandBeforeDeadline(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	w.send(url, "m0")
	cmd, dir := script(t, `trap '' TERM; cat > /dev/null; echo $$ > "$STATE/pid"; sleep 30`)
	// The worker's own clock: the kill grace (5 s) must not end in the
	// 2.4 s the shutdown has.
	const timeout = 2400 * time.Millisecond
	wk, err := worker.New(w.cl, worker.Config{QueueURL: url, Target: &worker.CommandTarget{Command: cmd},
		MaxConcurrency: 1, ShutdownTimeout: timeout, Logger: testLogger(t), Observer: w.obs})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wk.Run(context.Background()) }()
	var pid int
	checkFor(t, func() error {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return errors.New("not started")
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return nil
	})
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r := wk.Shutdown(ctx)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("Run returned but the command (pid %d) still runs; report %+v", pid, r)
	}
	if r.Released != 1 || r.ReleaseFailed != 0 || r.Stuck != 0 {
		t.Errorf("report %+v, want 1 released, none failed or stuck", r)
	}
	if v, f := w.counts(url); v != 1 || f != 0 {
		t.Errorf("after Run returned: %d visible, %d in flight; want 1, 0", v, f)
	}
}

// shutdownOnStart is a slog handler that calls Shutdown when the worker
// logs "worker started": a SIGTERM landing between Run storing its
// consumer and starting it.
type shutdownOnStart struct {
	wk **worker.Worker
}

func (h shutdownOnStart) Enabled(context.Context, slog.Level) bool { return true }

func (h shutdownOnStart) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "worker started" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		(*h.wk).Shutdown(ctx)
	}
	return nil
}

func (h shutdownOnStart) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h shutdownOnStart) WithGroup(string) slog.Handler      { return h }

// A Shutdown during start-up, before the consumer runs, makes Run return
// nil, as a stop (the CLI exits 0), not consumer.ErrClosed.
func TestShutdownDuringStartReturnsNil(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", nil)
	var wk *worker.Worker
	cfg := w.config(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: "http://127.0.0.1:1/"}})
	cfg.Logger = slog.New(shutdownOnStart{&wk})
	wk, err := worker.New(w.cl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := wk.Run(context.Background()); err != nil {
		t.Errorf("Run after a Shutdown during start: %v, want nil", err)
	}
	if n := w.obs.Count(consumer.EventReceived); n != 0 {
		t.Errorf("%d receives, want none", n)
	}
}

// refusingClient refuses every visibility change once armed, as a server
// whose credentials were revoked would.
type refusingClient struct {
	consumer.Client
	armed atomic.Bool
}

func (c *refusingClient) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, o ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if c.armed.Load() {
		return nil, &smithy.GenericAPIError{Code: "AccessDenied", Message: "refused by the test"}
	}
	return c.Client.ChangeMessageVisibilityBatch(ctx, in, o...)
}

// A shutdown whose releases fail is no clean stop: Run returns
// ErrUnfinishedShutdown saying how many, and the stop line, at level
// ERROR, says what becomes of those messages; a supervisor reading the
// exit status learns that they come back only when their leases lapse.
func TestShutdownWithFailedReleasesIsAnError(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	w.send(url, numbered("m", 5)...)
	rec, target := w.httpTarget(func(n int, e event, r *http.Request) (int, http.Header, string) {
		<-r.Context().Done()
		return http.StatusOK, nil, ""
	})
	log := &logbuf.Buffer{}
	client := &refusingClient{Client: w.cl}
	wk, err := worker.New(client, w.config(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target},
		ShutdownTimeout: 2300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(log, nil))}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	checkFor(t, func() error {
		if rec.n() != 1 {
			return errors.New("the target has not started")
		}
		return nil
	})
	client.armed.Store(true)
	stop() // SIGTERM
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return a minute after its context ended")
	}
	if !errors.Is(runErr, worker.ErrUnfinishedShutdown) || !strings.Contains(runErr.Error(), "5 release(s) failed") {
		t.Errorf("Run: %v, want ErrUnfinishedShutdown with 5 failed releases", runErr)
	}
	want := `level=ERROR msg="worker stopped without finishing its shutdown"`
	if !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "release_failed=5") {
		t.Errorf("want %q and release_failed=5 in the log:\n%s", want, log.String())
	}
}

// A shutdown that ends with a handler still running is unfinished: its
// messages were released while the delivery may still run, and another
// consumer may receive them while the target still works on them. Here a
// command leaves a process in a session of its own holding its standard
// output (which a command must not do), so its delivery waits on that
// output past the deadline: Run returns ErrUnfinishedShutdown saying so,
// and the stop line is an error.
// The process writes its PID itself once in its own session: the shell's
// $! is known as soon as it forks, and the test stopped the worker while,
// on a loaded machine, the process had not yet left the command's group,
// so the stop could kill it with the command, and nothing was stuck (Run
// returned nil every time with a setsid made to wait a second first).
func TestShutdownWithStuckHandlerIsAnError(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	w.send(url, "m0")
	cmd, dir := script(t, `cat > /dev/null; setsid sh -c 'echo $$ > "$1/child"; exec sleep 300' sh "$STATE" & while :; do sleep 0.02; done`)
	log := &logbuf.Buffer{}
	wk, err := worker.New(w.cl, w.config(worker.Config{QueueURL: url, Target: &worker.CommandTarget{Command: cmd},
		ShutdownTimeout: 2300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(log, nil))}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	var child int
	checkFor(t, func() error {
		b, err := os.ReadFile(filepath.Join(dir, "child"))
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return errors.New("not started")
		}
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return nil
	})
	t.Cleanup(func() {
		if child > 0 {
			syscall.Kill(child, syscall.SIGKILL)
		}
	})
	stop() // SIGTERM
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return a minute after its context ended")
	}
	if !errors.Is(runErr, worker.ErrUnfinishedShutdown) || !strings.Contains(runErr.Error(), "1 handler(s) still ran") {
		t.Errorf("Run: %v, want ErrUnfinishedShutdown with 1 handler still running", runErr)
	}
	want := `level=ERROR msg="worker stopped without finishing its shutdown"`
	if !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "stuck=1") || !strings.Contains(log.String(), "released=1") {
		t.Errorf("want %q with stuck=1 and released=1 in the log:\n%s", want, log.String())
	}
}

// hangingClient's receives never answer: they end only when cancelled,
// as against a server that stopped answering.
type hangingClient struct {
	consumer.Client
	inflight atomic.Int64
}

func (c *hangingClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// A shutdown that had to cancel a receive handed back what it held, so Run
// returns nil (exit status 0), but its stop line is a warning: the server
// may have leased messages to the receive it cancelled, which then come
// back only when their leases lapse.
func TestShutdownCancellingReceivesWarns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", nil)
	client := &hangingClient{Client: w.cl}
	log := &logbuf.Buffer{}
	wk, err := worker.New(client, w.config(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: "http://127.0.0.1:1/"},
		ShutdownTimeout: 2300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(log, nil))}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	checkFor(t, func() error {
		if client.inflight.Load() == 0 {
			return errors.New("no receive in flight")
		}
		return nil
	})
	stop() // SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v, want nil (everything held was handed back)", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return a minute after its context ended")
	}
	want := `level=WARN msg="worker stopped, its receives cut short: what it held was handed back, but receives in flight had not answered by the deadline and were cancelled`
	if !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "receives_cancelled=1") {
		t.Errorf("want %q with receives_cancelled=1 in the log:\n%s", want, log.String())
	}
}
