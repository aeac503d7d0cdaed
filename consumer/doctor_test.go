package consumer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
)

func TestDoctor(t *testing.T) {
	t.Parallel()
	good := map[string]string{"RedrivePolicy": redrive, "VisibilityTimeout": "60"}
	tests := []struct {
		name  string
		queue string
		attrs map[string]string
		opts  []consumer.Option
		want  map[string]consumer.Severity // check -> severity expected among the findings
		clean bool                         // no findings at all
	}{
		{"good set-up", "q", good, nil, nil, true},
		{"no redrive policy", "q", map[string]string{"VisibilityTimeout": "60"}, nil,
			map[string]consumer.Severity{"redrive": consumer.SeverityWarning}, false},
		{"renew-ahead not shorter than the lease", "q", good, []consumer.Option{consumer.WithRenewAhead(time.Minute)},
			map[string]consumer.Severity{"renew-ahead": consumer.SeverityError}, false},
		{"renew-ahead tiny", "q", good, []consumer.Option{consumer.WithRenewAhead(time.Second)},
			map[string]consumer.Severity{"renew-ahead": consumer.SeverityWarning}, false},
		{"long poll eats the lease", "q", good, []consumer.Option{consumer.WithWaitTime(20 * time.Second), consumer.WithVisibilityTimeout(20 * time.Second)},
			map[string]consumer.Severity{"wait-time": consumer.SeverityWarning, "visibility": consumer.SeverityInfo}, false},
		{"stall timeout shorter than renew-ahead", "q", good, []consumer.Option{consumer.WithStallTimeout(time.Second)},
			map[string]consumer.Severity{"stall-timeout": consumer.SeverityWarning}, false},
		{"retries outlive retention", "q", map[string]string{"RedrivePolicy": redrive, "VisibilityTimeout": "60", "MessageRetentionPeriod": "600"}, nil,
			map[string]consumer.Severity{"retry-policy": consumer.SeverityWarning}, false},
		{"zero delays allowed", "q", good, []consumer.Option{consumer.WithRetryPolicy(consumer.RetryPolicy{AllowZero: true})},
			map[string]consumer.Severity{"retry-policy": consumer.SeverityWarning}, false},
		{"dead-letter queue missing", "q", map[string]string{"VisibilityTimeout": "60",
			"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:gone","maxReceiveCount":5}`}, nil,
			map[string]consumer.Severity{"dead-letter": consumer.SeverityWarning}, false},
		{"few receives", "q", map[string]string{"VisibilityTimeout": "60",
			"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":1}`}, nil,
			map[string]consumer.Severity{"redrive": consumer.SeverityWarning}, false},
		{"FIFO snoozes spend receives", "q.fifo", good, nil,
			map[string]consumer.Severity{"snooze": consumer.SeverityInfo}, false},
		{"attempt timeout inside the grace", "q", good, []consumer.Option{consumer.WithAttemptTimeout(2 * time.Second)},
			map[string]consumer.Severity{"attempt-timeout": consumer.SeverityWarning}, false},
		{"lease under six attempt timeouts", "q", good, []consumer.Option{consumer.WithAttemptTimeout(20 * time.Second)},
			map[string]consumer.Severity{"visibility": consumer.SeverityWarning}, false},
		{"hours-long leases stall a crash", "q", map[string]string{"RedrivePolicy": redrive, "VisibilityTimeout": "43200"}, nil,
			map[string]consumer.Severity{"visibility": consumer.SeverityWarning}, false},
		{"shutdown shorter than a long poll", "q", good, []consumer.Option{consumer.WithShutdownTimeout(15 * time.Second), consumer.WithWaitTime(20 * time.Second)},
			map[string]consumer.Severity{"shutdown": consumer.SeverityWarning}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := consumertest.NewSQS(consumertest.NewClock(time.Time{}))
			fake.CreateQueue("dlq", nil)
			url := fake.CreateQueue(tt.queue, tt.attrs)
			fs, err := consumer.Doctor(context.Background(), fake, url, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if tt.clean && len(fs) != 0 {
				t.Errorf("findings %v, want none", fs)
			}
			for check, sev := range tt.want {
				found := false
				for _, f := range fs {
					if f.Check == check && f.Severity == sev {
						found = true
					}
				}
				if !found {
					t.Errorf("findings %v, want a %v for %q", fs, sev, check)
				}
			}
		})
	}
}

// Run refuses to start on a Doctor error, and says why.
func TestRunRefusesBadSetup(t *testing.T) {
	t.Parallel()
	fake := consumertest.NewSQS(consumertest.NewClock(time.Time{}))
	url := fake.CreateQueue("q", map[string]string{"VisibilityTimeout": "10"})
	c, err := consumer.New(fake, url, consumer.HandlerFunc(func(context.Context, *consumer.Delivery) error { return nil }),
		consumer.WithRenewAhead(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(context.Background())
	var de *consumer.DoctorError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "renew-ahead") {
		t.Fatalf("Run = %v, want a DoctorError about renew-ahead", err)
	}
	if _, err := c.Run(context.Background()); !errors.Is(err, consumer.ErrClosed) {
		t.Errorf("second Run = %v, want ErrClosed", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	fake := consumertest.NewSQS(consumertest.NewClock(time.Time{}))
	h := consumer.HandlerFunc(func(context.Context, *consumer.Delivery) error { return nil })
	tests := []struct {
		name string
		opt  consumer.Option
	}{
		{"zero concurrency", consumer.WithConcurrency(0)},
		{"batch too big", consumer.WithBatchSize(11)},
		{"short poll", consumer.WithWaitTime(0)},
		{"poll too long", consumer.WithWaitTime(21 * time.Second)},
		{"lease under a second", consumer.WithVisibilityTimeout(time.Millisecond)},
		{"lease past 12 h", consumer.WithVisibilityTimeout(13 * time.Hour)},
		{"nil clock", consumer.WithClock(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := consumer.New(fake, "u", h, tt.opt); err == nil {
				t.Errorf("New accepted %s", tt.name)
			}
		})
	}
}
