package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pgstore"
)

// A node that joins a cluster takes the leases running then from the
// store, and tells the other nodes nothing of them: they saw those leases
// begin. The lapse is counted once over the nodes' metrics.
func TestLedgerSeedOfJoiningNode(t *testing.T) {
	t.Parallel()
	t.Run("InMemory", func(t *testing.T) {
		t.Parallel()
		c := memstore.NewCluster()
		testSeedOfJoiningNode(t, []byte("one receipt key for every node.."), func() baton.SharedStore {
			h := c.Open()
			t.Cleanup(func() { h.Close() })
			return h
		}, func(baton.SharedStore) {})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		url := pgtest.MustStart(t).MustDatabase(t)
		ctx := context.Background()
		open := func() baton.SharedStore {
			s, err := pgstore.Open(ctx, url, pgstore.Options{Logger: clusterLog})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		// What the others publish before a node listens is lost.
		listening := func(s baton.SharedStore) {
			select {
			case <-s.(*pgstore.Store).Listening():
			case <-time.After(30 * time.Second):
				t.Fatal("node's store not listening after 30 s")
			}
		}
		first := open()
		key, err := first.(*pgstore.Store).ReceiptKey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		opened := false
		testSeedOfJoiningNode(t, key, func() baton.SharedStore {
			if !opened {
				opened = true
				return first
			}
			return open()
		}, listening)
	})
}

// testSeedOfJoiningNode plays the story on stores open returns, one a
// node, all with receipt key key; listening waits until a node's store
// hears the others.
func testSeedOfJoiningNode(t *testing.T, key []byte, open func() baton.SharedStore, listening func(baton.SharedStore)) {
	ctx := context.Background()
	stores := []baton.SharedStore{open(), open()}
	nodes, clock := startNodes(t, stores, key, func(i int) { listening(stores[i]) })
	first := nodes[0]
	sent, err := first.SendMessage(ctx, clusterQueue, engine.SendParams{Body: "job"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := first.ReceiveMessage(as(sdkClient), clusterQueue, engine.ReceiveParams{}); err != nil || len(got) != 1 {
		t.Fatalf("receive: %d messages, %v", len(got), err)
	}
	// Once the second node has the receive, the first has published it:
	// it cannot reach a node that starts after.
	poll.For(t, 30*time.Second, func() error {
		if s := mustReport(t, nodes[1]).SinceStart; s.Received != 1 {
			return errors.New("the second node has not seen the receive yet")
		}
		return nil
	})
	clock.Set(testutil.Epoch.Add(10 * time.Second))
	joinedStore := open()
	joined, err := engine.New(engine.Config{Store: joinedStore, Clock: clock, ReceiptKey: key, Logger: clusterLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(joined.Close)
	listening(joinedStore)

	active, err := joined.ActiveLeases(ctx, clusterQueue, 10)
	if err != nil || len(active) != 1 || active[0].MessageID != sent.MessageID || !active[0].Begin.Equal(testutil.Epoch) {
		t.Fatalf("the joining node's running leases %+v, %v; want the one begun at the epoch", active, err)
	}
	// An event the joining node makes reaches the first node; its seed,
	// taken before, did not.
	if _, err := joined.SendMessage(ctx, clusterQueue, engine.SendParams{Body: "another"}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, func() error {
		if s := mustReport(t, first).SinceStart; s.Sent != 2 {
			return errors.New("the first node has not seen the joining node's send yet")
		}
		return nil
	})
	if s := mustReport(t, first).SinceStart; s.Received != 1 {
		t.Errorf("the first node counts %d receives, want its 1", s.Received)
	}
	if got := historyOf(t, first, sent.MessageID); len(got) != 1 {
		t.Errorf("the first node's history %v, want its one receive", got)
	}
	if s := mustReport(t, joined).SinceStart; s.Received != 0 {
		t.Errorf("the joining node counts %d receives of a lease it did not see begin", s.Received)
	}

	clock.Set(testutil.Epoch.Add(31 * time.Second)) // the 30 s lease lapsed
	var lapses uint64
	for i, e := range []*engine.Engine{first, nodes[1], joined} {
		if s := mustReport(t, e).SinceStart; s.Expired != 1 {
			t.Errorf("node %d: %d lapses, want 1", i, s.Expired)
		}
		qs, err := e.QueueMetrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			lapses += q.Totals.Expired
		}
	}
	if lapses != 1 {
		t.Errorf("the nodes' metrics count %d lapses, want 1", lapses)
	}
}
