package worker_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/worker"
)

func TestNewRefusesBadSettings(t *testing.T) {
	t.Parallel()
	web := &worker.HTTPTarget{URL: "http://127.0.0.1:1/"}
	tests := []struct {
		name string
		cfg  worker.Config
		want string
	}{
		{"no queue", worker.Config{Target: web}, "no queue URL"},
		{"no target", worker.Config{QueueURL: "u"}, "no target"},
		{"bad URL", worker.Config{QueueURL: "u", Target: &worker.HTTPTarget{URL: "ftp://x"}}, "want an http"},
		{"no command", worker.Config{QueueURL: "u", Target: &worker.CommandTarget{}}, "no command"},
		{"batch too big", worker.Config{QueueURL: "u", Target: web, BatchSize: 10001, BatchingWindow: time.Second}, "must be 1 to 10000"},
		{"batch negative", worker.Config{QueueURL: "u", Target: web, BatchSize: -1}, "must be 1 to 10000"},
		{"over ten without window", worker.Config{QueueURL: "u", Target: web, BatchSize: 11}, "batching window of at least 1s"},
		{"over ten, short window", worker.Config{QueueURL: "u", Target: web, BatchSize: 11, BatchingWindow: 500 * time.Millisecond}, "at least 1s"},
		{"window too long", worker.Config{QueueURL: "u", Target: web, BatchingWindow: 301 * time.Second}, "must be 0 to 5m0s"},
		{"concurrency", worker.Config{QueueURL: "u", Target: web, MaxConcurrency: 1001}, "must be 1 to 1000"},
		{"payload", worker.Config{QueueURL: "u", Target: web, MaxPayload: -5}, "must be positive"},
		{"timeout", worker.Config{QueueURL: "u", Target: web, TargetTimeout: 12 * time.Hour}, "under 12h"},
		{"visibility", worker.Config{QueueURL: "u", Target: web, VisibilityTimeout: 500 * time.Millisecond}, "1s to 12h"},
		{"per-message batch", worker.Config{QueueURL: "u", Target: &worker.HTTPTarget{URL: "http://h/", PerMessage: true}, BatchSize: 5}, "one message per request"},
		{"per-message window", worker.Config{QueueURL: "u", Target: &worker.HTTPTarget{URL: "http://h/", PerMessage: true}, BatchingWindow: time.Second}, "no batching window"},
		{"per-message report", worker.Config{QueueURL: "u", Target: &worker.HTTPTarget{URL: "http://h/", PerMessage: true}, ReportBatchItemFailures: true}, "no batch item failures"},
		{"Content-Type header", worker.Config{QueueURL: "u", Target: &worker.HTTPTarget{URL: "http://h/", Header: http.Header{"Content-Type": {"text/plain"}}}}, "header Content-Type: not allowed"},
		{"User-Agent header", worker.Config{QueueURL: "u", Target: &worker.HTTPTarget{URL: "http://h/", Header: http.Header{"user-agent": {"me"}}}}, "header User-Agent: not allowed"},
		{"Content-Length header", worker.Config{QueueURL: "u", Target: &worker.HTTPTarget{URL: "http://h/", Header: http.Header{"Content-Length": {"5"}}}}, "header Content-Length: not allowed"},
		{"two Host headers", worker.Config{QueueURL: "u", Target: &worker.HTTPTarget{URL: "http://h/", Header: http.Header{"Host": {"a", "b"}}}}, "header Host: want one host name"},
		{"empty Host header", worker.Config{QueueURL: "u", Target: &worker.HTTPTarget{URL: "http://h/", Header: http.Header{"Host": {""}}}}, "header Host: want one host name"},
	}
	for _, tt := range tests {
		_, err := worker.New(consumertest.NewSQS(consumertest.NewClock(time.Time{})), tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := worker.New(consumertest.NewSQS(consumertest.NewClock(time.Time{})),
		worker.Config{QueueURL: "u", Target: web, BatchSize: 10000, BatchingWindow: 300 * time.Second}); err != nil {
		t.Errorf("the largest batch and window: %v", err)
	}
}

// TestCheck covers what only the queue can tell: FIFO limits, the
// visibility timeout against the target timeout (the six-times rule), a
// visibility timeout of hours (the stall of a crash), and batches over one
// without partial batch responses.
func TestCheck(t *testing.T) {
	t.Parallel()
	fake := consumertest.NewSQS(consumertest.NewClock(time.Time{}))
	std := fake.CreateQueue("jobs", map[string]string{"VisibilityTimeout": "30"})
	fifo := fake.CreateQueue("jobs.fifo", map[string]string{"VisibilityTimeout": "300"})
	long := fake.CreateQueue("long", map[string]string{"VisibilityTimeout": "43200"})
	web := &worker.HTTPTarget{URL: "http://127.0.0.1:1/"}
	tests := []struct {
		name string
		cfg  worker.Config
		want []string // "severity check" of each finding
	}{
		{"fine", worker.Config{QueueURL: std, Target: web, TargetTimeout: 5 * time.Second}, nil},
		{"six times", worker.Config{QueueURL: std, Target: web, TargetTimeout: 10 * time.Second}, []string{"info visibility"}},
		{"shorter than the timeout", worker.Config{QueueURL: std, Target: web, TargetTimeout: time.Minute}, []string{"warning visibility"}},
		{"command grace counts", worker.Config{QueueURL: std, Target: &worker.CommandTarget{Command: "true", KillGrace: 26 * time.Second}, TargetTimeout: 5 * time.Second}, []string{"warning visibility", "warning shutdown"}},
		// Stopping a command takes twice its 2 s grace and 1 s, the
		// releases a third of the shutdown: 7 s of 6 s, 7.67 s of 8 s.
		{"shutdown shorter than a command's stop", worker.Config{QueueURL: std, Target: &worker.CommandTarget{Command: "true", KillGrace: 2 * time.Second}, TargetTimeout: 2 * time.Second, ShutdownTimeout: 6 * time.Second}, []string{"warning shutdown"}},
		{"shutdown covers a command's stop", worker.Config{QueueURL: std, Target: &worker.CommandTarget{Command: "true", KillGrace: 2 * time.Second}, TargetTimeout: 2 * time.Second, ShutdownTimeout: 8 * time.Second}, nil},
		{"HTTP: no stop to cover", worker.Config{QueueURL: std, Target: web, TargetTimeout: 4 * time.Second, ShutdownTimeout: time.Second}, nil},
		{"window counts", worker.Config{QueueURL: std, Target: web, TargetTimeout: 4 * time.Second, BatchSize: 100, BatchingWindow: 10 * time.Second}, []string{"info visibility"}},
		{"own visibility", worker.Config{QueueURL: std, Target: web, TargetTimeout: 5 * time.Second, VisibilityTimeout: 2 * time.Second}, []string{"warning visibility"}},
		{"FIFO batch too big", worker.Config{QueueURL: fifo, Target: web, BatchSize: 20, BatchingWindow: time.Second, ReportBatchItemFailures: true}, []string{"error batch-size", "error batching-window"}},
		{"FIFO window", worker.Config{QueueURL: fifo, Target: web, BatchingWindow: time.Second}, []string{"error batching-window"}},
		{"FIFO fine", worker.Config{QueueURL: fifo, Target: web, BatchSize: 10}, nil},
		{"12 h leases stall a crash", worker.Config{QueueURL: long, Target: web, TargetTimeout: 5 * time.Second}, []string{"warning visibility"}},
		{"12 h leases a long target needs", worker.Config{QueueURL: long, Target: web, TargetTimeout: 3 * time.Hour}, []string{"info visibility"}},
		{"whole batches fail together", worker.Config{QueueURL: std, Target: web, TargetTimeout: 5 * time.Second, BatchSize: 10}, []string{"warning partial-batch"}},
		{"batches of one", worker.Config{QueueURL: std, Target: web, TargetTimeout: 5 * time.Second, BatchSize: 1}, nil},
		{"one per request", worker.Config{QueueURL: std, Target: &worker.HTTPTarget{URL: "http://127.0.0.1:1/", PerMessage: true}, TargetTimeout: 5 * time.Second, BatchSize: 1}, nil},
	}
	for _, tt := range tests {
		if !strings.Contains(tt.name, "batch") && !strings.Contains(tt.name, "per request") {
			// Every other case answers for each message.
			tt.cfg.ReportBatchItemFailures = true
		}
		fs, err := worker.Check(context.Background(), fake, tt.cfg)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		var got []string
		for _, f := range fs {
			got = append(got, f.Severity.String()+" "+f.Check)
		}
		if strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
			t.Errorf("%s: findings %q, want %q (%v)", tt.name, got, tt.want, fs)
		}
	}
	// Run refuses what Check reports as an error.
	w, err := worker.New(fake, worker.Config{QueueURL: fifo, Target: web, BatchingWindow: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "refusing to start") {
		t.Errorf("Run on a FIFO queue with a window: %v, want a refusal", err)
	}
	if fs, _ := worker.Check(context.Background(), fake, worker.Config{QueueURL: std, Target: web, TargetTimeout: time.Minute}); len(fs) == 1 {
		if !strings.Contains(fs[0].Message, "six times") || fs[0].Severity != consumer.SeverityWarning {
			t.Errorf("the explanation does not name the six-times rule: %v", fs[0])
		}
	}
}
