package engine_test

import (
	"context"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// leaseThenHangUp is a store whose lease is made while the caller's client
// hangs up, and which then answers the caller's context's error, as the
// embedded store does for a lease whose commit it was still waiting for
// (the change stays queued and is written).
type leaseThenHangUp struct {
	*memstore.Store
	hangUp context.CancelFunc
}

func (s *leaseThenHangUp) MessageReceive(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	msgs, err := s.Store.MessageReceive(ctx, p)
	if s.hangUp != nil {
		s.hangUp()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return msgs, err
}

// A receive whose client hangs up while its lease is being made still
// leases the message: the ledger must hear of it, or the doctor would not
// name a message leased to nobody, hidden for its visibility timeout.
func TestReceiveAbandonedMidLeaseIsRecorded(t *testing.T) {
	t.Parallel()
	store := &leaseThenHangUp{Store: memstore.New()}
	e, err := engine.New(engine.Config{Store: store, Clock: clock.NewFake(testutil.Epoch)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	bg := context.Background()
	ref := engine.QueueRef{Account: "000000000000", Name: "q"}
	if _, err := e.CreateQueue(bg, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SendMessage(bg, ref, engine.SendParams{Body: "m"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	store.hangUp = cancel
	e.ReceiveMessage(ctx, ref, engine.ReceiveParams{}) // its answer reaches nobody
	store.hangUp = nil
	rep, err := e.LeaseReport(bg, ref)
	if err != nil {
		t.Fatal(err)
	}
	if rep.SinceStart.Received != 1 {
		t.Errorf("the ledger saw %d receives of the leased message, want 1", rep.SinceStart.Received)
	}
}
