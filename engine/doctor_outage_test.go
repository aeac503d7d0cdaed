package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// listsFail is a memory store whose queue listings fail while down, as a
// database store's do when its database goes away between two reads.
type listsFail struct {
	*memstore.Store
	down atomic.Bool
}

func (s *listsFail) QueueList(ctx context.Context, p baton.QueueListParams) ([]*baton.Queue, error) {
	if s.down.Load() {
		return nil, errStoreDown
	}
	return s.Store.QueueList(ctx, p)
}

// The doctor's report on a dead-letter queue, whose leases are a person
// looking at what failed, not a handler: when the store cannot say which
// queues send their failures to it, the report is the store's error (503),
// not a verdict on the queue judged as one whose leases are a handler's.
func TestDoctorDeadLetterSourcesUnread(t *testing.T) {
	t.Parallel()
	s := &listsFail{Store: memstore.New()}
	clk := clock.NewFake(testutil.Epoch)
	e, err := engine.New(engine.Config{Store: s, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	in := &incident{t: t, e: e, clock: clk, ref: engine.QueueRef{Account: "000000000000", Name: "orders-dlq"}}
	in.queue("orders-dlq", nil)
	in.queue("orders", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"` + e.ARN(in.ref.Account, "orders-dlq") + `","maxReceiveCount":"3"}`})
	in.send(4)
	in.receive(10, nil)
	in.at(40)
	in.receive(10, nil)
	in.at(100)
	in.report() // the store up: the inspection is said so (TestDoctorIncidentDeadLetterInspection)

	s.down.Store(true)
	r, err := e.LeaseReport(context.Background(), in.ref)
	if !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("report with the dead-letter sources unread: %v, %v; want ErrUnavailable", r, err)
	}
	s.down.Store(false)
	if r := in.report(); r.Diagnosis != "healthy" {
		t.Errorf("report with the store back: %q, want healthy (a dead-letter queue's looks)", r.Diagnosis)
	}
}
