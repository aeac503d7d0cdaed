package consumer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
)

// Renewals extend by the lease length until 100 handlers have succeeded,
// then by their p99 plus a quarter: handlers that take 50 s on a 30 s lease
// are renewed by 30 s each at first, by 63 s afterwards. The outgrown lease
// is reported once, and the extension is exported.
func TestRenewalSizedFromHandlerP99(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "sized", map[string]string{"VisibilityTimeout": "30"})
		for i := 0; i < 100; i++ {
			h.sqs.Send(h.url, fmt.Sprint(i), "")
		}
		metrics := consumer.NewMetrics()
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			tm := h.clock.NewTimer(50 * time.Second)
			defer tm.Stop()
			select {
			case <-tm.C():
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}), consumer.WithConcurrency(10), consumer.WithObserver(consumer.Observers(h.obs, metrics)))
		if got := h.c.LeaseExtension(); got != 30*time.Second {
			t.Fatalf("extension before any sample %v, want the lease length 30s", got)
		}
		h.advanceUntil(20*time.Minute, time.Second, func() error {
			if n := h.obs.Count(consumer.EventDeleted); n != 100 {
				return fmt.Errorf("deleted %d of 100", n)
			}
			return nil
		})
		if p, ok := h.c.HandlerP99(); p != 50*time.Second || !ok {
			t.Fatalf("HandlerP99 = %v, %v; want 50s, true", p, ok)
		}
		if got := h.c.LeaseExtension(); got != 63*time.Second {
			t.Fatalf("extension after 100 samples %v, want 63s (50 s + a quarter, rounded up)", got)
		}
		before := consumertestVisibilities(h)
		for _, v := range before {
			if v != 30 {
				t.Fatalf("renewal of %d s before 100 samples, want 30: %v", v, before)
			}
		}
		out := h.obs.All(consumer.EventLeaseOutgrown)
		if len(out) != 1 || out[0].Duration != 50*time.Second || out[0].Visibility != 30*time.Second {
			t.Errorf("lease-outgrown events %+v, want one with 50s over 30s", out)
		}
		h.sqs.Send(h.url, "late", "")
		h.advanceUntil(2*time.Minute, time.Second, func() error {
			if n := h.obs.Count(consumer.EventDeleted); n != 101 {
				return fmt.Errorf("deleted %d of 101", n)
			}
			return nil
		})
		after := consumertestVisibilities(h)[len(before):]
		if fmt.Sprint(after) != "[63]" {
			t.Errorf("renewals of the 101st message %v, want [63]", after)
		}
		var buf strings.Builder
		if _, err := metrics.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if want := `baton_consumer_lease_extension_seconds{queue="sized"} 63`; !strings.Contains(buf.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, buf.String())
		}
	})
}
