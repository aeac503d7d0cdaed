package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/pgstore"
)

// countingPG is a PostgreSQL store that counts the calls an engine's start
// makes to seed its lease ledger.
type countingPG struct {
	*pgstore.Store
	browses, lists, inFlight atomic.Int64
}

func (s *countingPG) MessageBrowse(ctx context.Context, p baton.MessageBrowseParams) (baton.MessageBrowsePage, error) {
	s.browses.Add(1)
	return s.Store.MessageBrowse(ctx, p)
}

func (s *countingPG) QueueList(ctx context.Context, p baton.QueueListParams) ([]*baton.Queue, error) {
	s.lists.Add(1)
	return s.Store.QueueList(ctx, p)
}

func (s *countingPG) MessagesInFlight(ctx context.Context, now time.Time, perQueue int) (map[uint64][]*baton.Message, error) {
	s.inFlight.Add(1)
	return s.Store.MessagesInFlight(ctx, now, perQueue)
}

// TestLedgerSeedOneStatementOnPostgreSQL: an engine starting on PostgreSQL
// reads the leases running in every queue with one statement, however many
// queues there are, and seeds each queue's. It used to list the queues
// and browse each, one statement or more a queue: a start over thousands
// of queues made thousands of round trips.
func TestLedgerSeedOneStatementOnPostgreSQL(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, url, pgstore.Options{Logger: clusterLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := clock.NewFake(testutil.Epoch)
	first, err := engine.New(engine.Config{Store: st, Clock: now, Logger: clusterLog})
	if err != nil {
		t.Fatal(err)
	}
	const queues = 120
	held := map[string]string{} // queue name: the message held in it
	for i := range queues {
		ref := engine.QueueRef{Account: "000000000000", Name: fmt.Sprintf("q-%03d", i)}
		if _, err := first.CreateQueue(ctx, engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
			t.Fatal(err)
		}
		if i%40 != 7 {
			continue
		}
		sent, err := first.SendMessage(ctx, ref, engine.SendParams{Body: "job"})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := first.ReceiveMessage(as(sdkClient), ref, engine.ReceiveParams{}); err != nil || len(got) != 1 {
			t.Fatalf("receive from %s: %d messages, %v", ref.Name, len(got), err)
		}
		held[ref.Name] = sent.MessageID
	}
	first.Close()

	counted := &countingPG{Store: st}
	e, err := engine.New(engine.Config{Store: counted, Clock: now, Logger: clusterLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if b, l, f := counted.browses.Load(), counted.lists.Load(), counted.inFlight.Load(); b != 0 || l != 0 || f != 1 {
		t.Fatalf("the start made %d browses and %d queue lists and read the messages in flight %d times; want one read of them, nothing else", b, l, f)
	}
	for i := range queues {
		ref := engine.QueueRef{Account: "000000000000", Name: fmt.Sprintf("q-%03d", i)}
		active, err := e.ActiveLeases(ctx, ref, 10)
		if err != nil {
			t.Fatal(err)
		}
		id, isHeld := held[ref.Name]
		switch {
		case isHeld && (len(active) != 1 || active[0].MessageID != id):
			t.Errorf("%s: running leases %+v, want the one of %s", ref.Name, active, id)
		case !isHeld && len(active) != 0:
			t.Errorf("%s: running leases %+v, want none", ref.Name, active)
		}
	}
}
