package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pgstore"
)

// The lease ledger shared by nodes: three engines, each on its own store
// on one PostgreSQL database (as three `baton serve` processes would be),
// with one fake clock, play a lease story through different nodes, and
// every node must then report the same story.

// clusterQueue is the test queue: a 30-second lease.
var clusterQueue = engine.QueueRef{Account: "000000000000", Name: "shared-ledger"}

// startCluster starts n engines on one fresh database.
func startCluster(t *testing.T, pg *pgtest.Cluster, n int) ([]*engine.Engine, *clock.Fake) {
	t.Helper()
	return startClusterOn(t, pg.MustDatabase(t), n)
}

// startClusterOn starts n engines on the database at url.
func startClusterOn(t *testing.T, url string, n int) ([]*engine.Engine, *clock.Fake) {
	t.Helper()
	return startClusterWith(t, url, n, pgstore.Options{Logger: clusterLog})
}

// startClusterWith starts n engines on the database at url, their stores
// opened with opts.
func startClusterWith(t *testing.T, url string, n int, opts pgstore.Options) ([]*engine.Engine, *clock.Fake) {
	t.Helper()
	ctx := context.Background()
	stores := make([]*pgstore.Store, n)
	shared := make([]baton.SharedStore, n)
	for i := range stores {
		s, err := pgstore.Open(ctx, url, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i], shared[i] = s, s
	}
	key, err := stores[0].ReceiptKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return startNodes(t, shared, key, func(i int) {
		// What the others publish before this node listens is lost.
		select {
		case <-stores[i].Listening():
		case <-time.After(30 * time.Second):
			t.Fatal("node's store not listening after 30 s")
		}
	})
}

// startMemCluster starts n engines on handles of one memstore.Cluster:
// the cluster's paths without a database.
func startMemCluster(t *testing.T, n int) ([]*engine.Engine, *clock.Fake) {
	t.Helper()
	c := memstore.NewCluster()
	stores := make([]baton.SharedStore, n)
	for i := range stores {
		h := c.Open()
		t.Cleanup(func() { h.Close() })
		stores[i] = h
	}
	return startNodes(t, stores, []byte("one receipt key for every node.."), nil)
}

// clusterLog is the cluster's nodes' logger.
var clusterLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// startNodes starts an engine on each store, on one fake clock and
// receipt key, and creates clusterQueue through the first. ready, if set,
// waits until node i hears the others.
func startNodes(t *testing.T, stores []baton.SharedStore, key []byte, ready func(i int)) ([]*engine.Engine, *clock.Fake) {
	t.Helper()
	ctx := context.Background()
	clock := clock.NewFake(testutil.Epoch)
	nodes := make([]*engine.Engine, len(stores))
	for i, s := range stores {
		e, err := engine.New(engine.Config{Store: s, Clock: clock, ReceiptKey: key, Logger: clusterLog})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close) // before the store closes: cleanups run last first
		nodes[i] = e
		if ready != nil {
			ready(i)
		}
	}
	if _, err := nodes[0].CreateQueue(ctx, engine.CreateQueueParams{
		Account: clusterQueue.Account, Name: clusterQueue.Name, Attributes: map[string]string{"VisibilityTimeout": "30"},
	}); err != nil {
		t.Fatal(err)
	}
	return nodes, clock
}

func mustReceiveOne(t *testing.T, e *engine.Engine) engine.ReceivedMessage {
	t.Helper()
	got, err := e.ReceiveMessage(context.Background(), clusterQueue, engine.ReceiveParams{})
	if err != nil || len(got) != 1 {
		t.Fatalf("receive: %d messages, %v; want 1", len(got), err)
	}
	return got[0]
}

func mustReport(t *testing.T, e *engine.Engine) *ledger.LeaseReport {
	t.Helper()
	r, err := e.LeaseReport(context.Background(), clusterQueue)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// historyOf renders a message's history as kind@second#epoch.
func historyOf(t *testing.T, e *engine.Engine, id string) []string {
	t.Helper()
	evs, _, err := e.MessageHistory(context.Background(), clusterQueue, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%s@%d#%d", ev.Kind, int(ev.At.Sub(testutil.Epoch)/time.Second), ev.Epoch))
	}
	return out
}

func TestLedgerSharedByNodes(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	start := func(t *testing.T, n int) ([]*engine.Engine, *clock.Fake) { return startCluster(t, pg, n) }
	t.Run("Incident", func(t *testing.T) { t.Parallel(); testSharedIncident(t, start) })
	t.Run("RenewedElsewhere", func(t *testing.T) { t.Parallel(); testSharedRenewal(t, start) })
}

// TestLedgerSharedByNodesInMemory plays the same stories on a
// memstore.Cluster.
func TestLedgerSharedByNodesInMemory(t *testing.T) {
	t.Parallel()
	t.Run("Incident", func(t *testing.T) { t.Parallel(); testSharedIncident(t, startMemCluster) })
	t.Run("RenewedElsewhere", func(t *testing.T) { t.Parallel(); testSharedRenewal(t, startMemCluster) })
}

// startFunc starts n engines sharing one store.
type startFunc func(t *testing.T, n int) ([]*engine.Engine, *clock.Fake)

// testSharedIncident splits the classic incident over three nodes: handler
// A receives on node 1 at t=0 with a 30 s lease and works for 90 s; worker
// B receives on node 2 at t=31, after the lease lapsed; C receives on node 3
// at t=62; A's late delete arrives on node 3 at t=90 and removes the
// message from C.
func testSharedIncident(t *testing.T, start startFunc) {
	ctx := context.Background()
	nodes, clock := start(t, 3)
	sent, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: "charge card 42"})
	if err != nil {
		t.Fatal(err)
	}
	a := mustReceiveOne(t, nodes[0])
	clock.Advance(31 * time.Second)
	mustReceiveOne(t, nodes[1])
	clock.Advance(31 * time.Second)
	mustReceiveOne(t, nodes[2])
	clock.Advance(28 * time.Second)
	if err := nodes[2].DeleteMessage(ctx, clusterQueue, a.ReceiptHandle); err != nil {
		t.Fatal(err)
	}

	wantHistory := []string{"receive@0#1", "expire@30#1", "receive@31#2", "expire@61#2", "receive@62#3", "late-delete@90#1", "removed@90#3"}
	testutil.CheckFor(t, 10*time.Second, func() error {
		for i, e := range nodes {
			s := mustReport(t, e).SinceStart
			if s.Sent != 1 || s.Received != 3 || s.Completed != 1 || s.Expired != 2 || s.Late < 1 || s.Duplicates != 1 ||
				s.RedeliveriesLapsedWhileWorking != 1 || s.RedeliveriesNeverReturned != 1 {
				return fmt.Errorf("node %d since start: %+v", i+1, s)
			}
			if h := historyOf(t, e, sent.MessageID); !slices.Equal(h, wantHistory) {
				return fmt.Errorf("node %d history %v, want %v", i+1, h, wantHistory)
			}
			late, err := e.RecentLateCompletions(ctx, clusterQueue)
			if err != nil {
				return err
			}
			if len(late) != 1 || late[0].Late != time.Minute || !late[0].Duplicate || late[0].Epoch != 1 {
				return fmt.Errorf("node %d late completions %+v, want lease 1's delete, a minute late, a duplicate", i+1, late)
			}
		}
		return nil
	})
	first := mustReport(t, nodes[0])
	if first.Diagnosis != ledger.DiagnosisLeaseTooShort || first.RecommendedVisibilityTimeout <= 90 {
		t.Errorf("node 1: diagnosis %s, recommended timeout %d s; want %s and more than the 90 s handler",
			first.Diagnosis, first.RecommendedVisibilityTimeout, ledger.DiagnosisLeaseTooShort)
	}
	for i, e := range nodes[1:] {
		r := mustReport(t, e)
		if r.Diagnosis != first.Diagnosis || r.RecommendedVisibilityTimeout != first.RecommendedVisibilityTimeout ||
			r.Window != first.Window || r.SinceStart != first.SinceStart {
			t.Errorf("node %d reports %+v; node 1 reports %+v", i+2, r, first)
		}
	}

	// Each node's metrics count what it originated, so that their sum is
	// the cluster's count.
	var sum ledger.LeaseStats
	for _, e := range nodes {
		qs, err := e.QueueMetrics(ctx)
		if err != nil || len(qs) != 1 {
			t.Fatalf("metrics: %+v, %v", qs, err)
		}
		tot := qs[0].Totals
		sum.Sent += tot.Sent
		sum.Received += tot.Received
		sum.Completed += tot.Completed
		sum.Expired += tot.Expired
		sum.Late += tot.Late
		sum.Duplicates += tot.Duplicates
	}
	want := ledger.LeaseStats{Sent: 1, Received: 3, Completed: 1, Expired: 2, Late: 1, Duplicates: 1}
	if sum != want {
		t.Errorf("metrics summed over the nodes: %+v, want %+v", sum, want)
	}
}

// testSharedRenewal: a lease received on node 1 and renewed through node 2
// is not counted as expired by node 1, even when node 1 reads its report
// past the original deadline before the renewal reaches it.
func testSharedRenewal(t *testing.T, start startFunc) {
	ctx := context.Background()
	nodes, clock := start(t, 3)
	sent, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: "slow but renewed"})
	if err != nil {
		t.Fatal(err)
	}
	m := mustReceiveOne(t, nodes[0])
	clock.Advance(20 * time.Second)
	if err := nodes[1].ChangeMessageVisibility(ctx, clusterQueue, m.ReceiptHandle, ptr(40)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(15 * time.Second) // t=35: past the first deadline, before the new one
	if r := mustReport(t, nodes[0]); r.SinceStart.Expired > 1 {
		t.Fatalf("node 1 counts %d expiries of one lease", r.SinceStart.Expired)
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		for i, e := range nodes {
			s := mustReport(t, e).SinceStart
			if s.Expired != 0 || s.Renewals != 1 {
				return fmt.Errorf("node %d at t=35: expired %d, renewals %d; want 0 and 1", i+1, s.Expired, s.Renewals)
			}
			leases, err := e.ActiveLeases(ctx, clusterQueue, 10)
			if err != nil {
				return err
			}
			if len(leases) != 1 || !leases[0].Deadline.Equal(testutil.Epoch.Add(60*time.Second)) {
				return fmt.Errorf("node %d active leases %+v, want one ending at t=60", i+1, leases)
			}
		}
		return nil
	})
	clock.Advance(15 * time.Second) // t=50
	if err := nodes[2].DeleteMessage(ctx, clusterQueue, m.ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	wantHistory := []string{"receive@0#1", "renew@20#1", "delete@50#1"}
	testutil.CheckFor(t, 10*time.Second, func() error {
		for i, e := range nodes {
			r := mustReport(t, e)
			if s := r.SinceStart; s.Expired != 0 || s.Completed != 1 || s.Late != 0 || r.Diagnosis != ledger.DiagnosisHealthy {
				return fmt.Errorf("node %d: %s, %+v", i+1, r.Diagnosis, s)
			}
			if h := historyOf(t, e, sent.MessageID); !slices.Equal(h, wantHistory) {
				return fmt.Errorf("node %d history %v, want %v", i+1, h, wantHistory)
			}
		}
		return nil
	})
	if qs, err := nodes[0].QueueMetrics(ctx); err != nil || qs[0].Totals.Expired != 0 {
		t.Errorf("node 1 metrics: %+v, %v; want no expiry", qs, err)
	}
}

// A holder that receives through one node and goes on polling through
// another is seen by every node's doctor: its held leases are not said to
// be held by one gone.
func TestLedgerHolderSeenThroughOtherNode(t *testing.T) {
	t.Parallel()
	nodes, clock := startMemCluster(t, 2)
	ctx := ledger.WithClient(context.Background(), ledger.Client{Addr: "10.0.0.20", UserAgent: "aws-sdk-go-v2/1.36.3"})
	for range 8 {
		if _, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: "job"}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 { // the p99: 0.2 s
		m := mustReceiveOne(t, nodes[0])
		clock.Advance(200 * time.Millisecond)
		if err := nodes[0].DeleteMessage(ctx, clusterQueue, m.ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := nodes[0].ReceiveMessage(ctx, clusterQueue, engine.ReceiveParams{MaxNumberOfMessages: ptr(10)}); err != nil || len(got) != 3 {
		t.Fatalf("received %d, %v; want 3", len(got), err)
	}
	for range 25 { // the handlers threw; the consumer polls on through node 2
		clock.Advance(time.Second)
		if _, err := nodes[1].ReceiveMessage(ctx, clusterQueue, engine.ReceiveParams{}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		for i, e := range nodes {
			r := mustReport(t, e)
			if r.Diagnosis != ledger.DiagnosisHeldUnrenewed || !strings.Contains(r.Advice, "Their holder went on making requests on the queue since it received them") {
				return fmt.Errorf("node %d: %s: %s", i+1, r.Diagnosis, r.Advice)
			}
		}
		return nil
	})
}
