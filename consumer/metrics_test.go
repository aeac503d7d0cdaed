package consumer_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	m := consumer.NewMetrics()
	q := "orders"
	for _, e := range []consumer.Event{
		{Kind: consumer.EventReceived, Queue: q, Count: 3},
		{Kind: consumer.EventHandled, Queue: q, Duration: 3 * time.Second, Visibility: 30 * time.Second, Renewals: 0, Outcome: "success"},
		{Kind: consumer.EventHandled, Queue: q, Duration: 45 * time.Second, Visibility: 30 * time.Second, Renewals: 2, Outcome: "error"},
		{Kind: consumer.EventRenewed, Queue: q},
		{Kind: consumer.EventRenewed, Queue: q},
		{Kind: consumer.EventStalled, Queue: q},
		{Kind: consumer.EventLeaseLost, Queue: q},
		{Kind: consumer.EventLateDelete, Queue: q},
		{Kind: consumer.EventReleased, Queue: q, Reason: consumer.ReasonShutdown},
		{Kind: consumer.EventReleased, Queue: q, Reason: consumer.ReasonError},
		{Kind: consumer.EventReleased, Queue: q, Reason: consumer.ReasonError},
		{Kind: consumer.EventError, Queue: q, Op: "ReceiveMessage", Err: errors.New("x")},
	} {
		m.Observe(e)
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
	for _, want := range []string{
		`# TYPE baton_consumer_handler_duration_seconds histogram`,
		`baton_consumer_received_messages_total{queue="orders"} 3`,
		`baton_consumer_handler_duration_seconds_bucket{queue="orders",outcome="success",le="5"} 1`,
		`baton_consumer_handler_duration_seconds_count{queue="orders",outcome="error"} 1`,
		`baton_consumer_handler_visibility_ratio_bucket{queue="orders",le="1"} 1`,
		`baton_consumer_handler_visibility_ratio_bucket{queue="orders",le="+Inf"} 2`,
		`baton_consumer_visibility_timeout_seconds{queue="orders"} 30`,
		`baton_consumer_renewals_total{queue="orders"} 2`,
		`baton_consumer_renewals_per_attempt_sum{queue="orders"} 2`,
		`baton_consumer_stalls_total{queue="orders"} 1`,
		`baton_consumer_leases_lost_total{queue="orders"} 1`,
		`baton_consumer_late_deletes_total{queue="orders"} 1`,
		`baton_consumer_releases_total{queue="orders",reason="error"} 2`,
		`baton_consumer_releases_total{queue="orders",reason="shutdown"} 1`,
		`baton_consumer_errors_total{queue="orders",op="ReceiveMessage"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q\n%s", want, body)
		}
	}
}

func TestMetricsEscapesLabels(t *testing.T) {
	t.Parallel()
	m := consumer.NewMetrics()
	m.Observe(consumer.Event{Kind: consumer.EventError, Queue: "q", Op: "a\"b\\c\nd"})
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if want := `op="a\"b\\c\nd"`; !strings.Contains(b.String(), want) {
		t.Errorf("output %q lacks %q", b.String(), want)
	}
}
