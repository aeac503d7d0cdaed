package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
)

// TestDatabaseOutage stops PostgreSQL under two serving nodes and starts it
// again: meanwhile requests fail as InternalError, promptly; afterwards
// sends and receives work, a long poll on one node is woken by a send on
// the other (its LISTEN connection is back), and the ledger bus carries
// events between the nodes again.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	nodes, clock := startCluster(t, pg, 2)
	ctx := context.Background()

	pg.Down()
	for i, n := range nodes {
		start := time.Now()
		_, err := n.SendMessage(ctx, clusterQueue, engine.SendParams{Body: "during"})
		if err == nil {
			t.Fatalf("node %d: send succeeded with the database down", i)
		}
		if e := baton.AsError(err); e.Code != baton.ErrInternal {
			t.Errorf("node %d: send error %v; want InternalError", i, e)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("node %d: send took %v to fail", i, d)
		}
		t.Logf("node %d: send failed after %v: %v", i, time.Since(start), err)
		start = time.Now()
		_, err = n.ReceiveMessage(ctx, clusterQueue, engine.ReceiveParams{WaitTimeSeconds: ptr(20)})
		t.Logf("node %d: long poll ended after %v: %v", i, time.Since(start), err)
	}
	time.Sleep(1500 * time.Millisecond) // an outage of a second and a half
	if err := pg.Up(ctx); err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		start := time.Now()
		if _, err := n.SendMessage(ctx, clusterQueue, engine.SendParams{Body: fmt.Sprint("after", i)}); err != nil {
			t.Errorf("node %d: first send after restart: %v (after %v)", i, err, time.Since(start))
		}
	}
	for i := range 2 {
		if _, err := nodes[i].ReceiveMessage(ctx, clusterQueue, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), VisibilityTimeout: ptr(0)}); err != nil {
			t.Errorf("node %d: receive after restart: %v", i, err)
		}
	}
	// Drain.
	got, err := nodes[0].ReceiveMessage(ctx, clusterQueue, engine.ReceiveParams{MaxNumberOfMessages: ptr(10)})
	if err != nil || len(got) != 2 {
		t.Fatalf("drain: %d, %v; want 2", len(got), err)
	}
	for _, m := range got {
		if err := nodes[1].DeleteMessage(ctx, clusterQueue, m.ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}

	// A long poll on node 1 is woken by a send on node 0, with the clock
	// standing still: only a notification can wake it.
	testutil.CheckFor(t, 30*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		type result struct {
			msgs []engine.ReceivedMessage
			err  error
		}
		res := make(chan result, 1)
		go func() {
			m, err := nodes[1].ReceiveMessage(pctx, clusterQueue, engine.ReceiveParams{WaitTimeSeconds: ptr(20)})
			res <- result{m, err}
		}()
		time.Sleep(200 * time.Millisecond)
		if _, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: "wake"}); err != nil {
			return err
		}
		r := <-res
		if r.err != nil {
			return r.err
		}
		if len(r.msgs) == 0 {
			// Not woken: take the message away for the next try.
			m, _ := nodes[0].ReceiveMessage(ctx, clusterQueue, engine.ReceiveParams{})
			for _, x := range m {
				nodes[0].DeleteMessage(ctx, clusterQueue, x.ReceiptHandle)
			}
			return errors.New("long poll on node 1 not woken by node 0's send")
		}
		return nodes[1].DeleteMessage(ctx, clusterQueue, r.msgs[0].ReceiptHandle)
	})

	// The ledger bus: a receive on node 0 shows in node 1's history.
	sent, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	mustReceiveOne(t, nodes[0])
	_ = clock
	testutil.CheckFor(t, 30*time.Second, func() error {
		if h := historyOf(t, nodes[1], sent.MessageID); len(h) == 0 {
			return errors.New("node 1 has not heard of node 0's receive")
		}
		return nil
	})
}
