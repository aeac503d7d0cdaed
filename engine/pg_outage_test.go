package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
	"github.com/baton-sqs/baton/store/pgstore"
)

// TestDatabaseOutage stops PostgreSQL under two serving nodes for longer
// than their stores retry, and starts it again: meanwhile requests fail as
// ServiceUnavailable (503, which SDKs retry), never InternalError, once the
// retry bound passes; a long poll keeps waiting instead of failing.
// Afterwards sends and receives work, a long poll on one node is woken by a
// send on the other (its LISTEN connection is back), and the ledger bus
// carries events between the nodes again.
func TestDatabaseOutage(t *testing.T) {
	skipnote.SkipUnlessLong(t, "PostgreSQL stopped under two nodes")
	t.Parallel()
	pg := pgtest.MustStart(t)
	const retryFor = time.Second
	nodes, clock := startClusterWith(t, pg.MustDatabase(t), 2, pgstore.Options{Logger: clusterLog, RetryFor: retryFor})
	ctx := context.Background()

	pg.Down()
	for i, n := range nodes {
		start := time.Now()
		_, err := n.SendMessage(ctx, clusterQueue, engine.SendParams{Body: "during"})
		if err == nil {
			t.Fatalf("node %d: send succeeded with the database down", i)
		}
		e := baton.AsError(err)
		if e.Code != baton.ErrServiceUnavailable || e.Code.Spec().Status != http.StatusServiceUnavailable {
			t.Errorf("node %d: send error %v (%d); want ServiceUnavailable (503)", i, e, e.Code.Spec().Status)
		}
		d := time.Since(start)
		if d < retryFor/2 {
			t.Errorf("node %d: send failed after %v, before its retries could pass %v", i, d, retryFor)
		}
		if d > 20*time.Second {
			t.Errorf("node %d: send took %v to fail", i, d)
		}
		t.Logf("node %d: send failed after %v: %v", i, d, err)

		// A long poll keeps waiting through the outage; its context ends
		// it, with the store's error (its last look failed), not an
		// empty receive.
		start = time.Now()
		pctx, cancel := context.WithTimeout(ctx, 3*retryFor)
		got, err := n.ReceiveMessage(pctx, clusterQueue, engine.ReceiveParams{WaitTimeSeconds: ptr(20)})
		cancel()
		if !errors.Is(err, baton.ErrUnavailable) || len(got) != 0 {
			t.Errorf("node %d: long poll during the outage: %d messages, %v; want it to wait, then ErrUnavailable", i, len(got), err)
		}
		if d := time.Since(start); d < 2*retryFor {
			t.Errorf("node %d: long poll ended after %v, before its context", i, d)
		}
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
		timers := clock.Timers()
		go func() {
			m, err := nodes[1].ReceiveMessage(pctx, clusterQueue, engine.ReceiveParams{WaitTimeSeconds: ptr(20)})
			res <- result{m, err}
		}()
		// The send must find the long poll waiting, its timer set, or it
		// would be the poll's first look that finds the message, not a wake.
		testutil.CheckFor(t, 30*time.Second, func() error {
			if clock.Timers() <= timers {
				return errors.New("the long poll on node 1 is not waiting yet")
			}
			return nil
		})
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
	testutil.CheckFor(t, 30*time.Second, func() error {
		if h := historyOf(t, nodes[1], sent.MessageID); len(h) == 0 {
			return errors.New("node 1 has not heard of node 0's receive")
		}
		return nil
	})
}

// TestDatabaseShortOutage stops PostgreSQL under two serving nodes for
// less than their stores retry: the requests made meanwhile (sends,
// receives, a delete) wait and succeed once it is back, and no message is
// lost or stored twice.
func TestDatabaseShortOutage(t *testing.T) {
	skipnote.SkipUnlessLong(t, "PostgreSQL stopped briefly under two nodes")
	t.Parallel()
	pg := pgtest.MustStart(t)
	nodes, _ := startClusterWith(t, pg.MustDatabase(t), 2, pgstore.Options{Logger: clusterLog, RetryFor: time.Minute})
	ctx := context.Background()
	if _, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: "before"}); err != nil {
		t.Fatal(err)
	}
	leased := mustReceiveOne(t, nodes[0])

	pg.Down()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i, n := range nodes {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := n.SendMessage(ctx, clusterQueue, engine.SendParams{Body: fmt.Sprint("during", i)}); err != nil {
				errs <- fmt.Errorf("node %d: send during the outage: %w", i, err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, _, err := n.ListQueues(ctx, engine.ListQueuesParams{Account: clusterQueue.Account}); err != nil {
				errs <- fmt.Errorf("node %d: list queues during the outage: %w", i, err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := nodes[1].DeleteMessage(ctx, clusterQueue, leased.ReceiptHandle); err != nil {
			errs <- fmt.Errorf("delete during the outage: %w", err)
		}
	}()
	time.Sleep(1500 * time.Millisecond) // an outage of a second and a half
	start := time.Now()
	if err := pg.Up(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	t.Logf("requests done %v after the database was started again", time.Since(start))
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := nodes[0].ReceiveMessage(ctx, clusterQueue, engine.ReceiveParams{MaxNumberOfMessages: ptr(10)})
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]int{}
	for _, m := range got {
		bodies[m.Body]++
	}
	if len(got) != 2 || bodies["during0"] != 1 || bodies["during1"] != 1 {
		t.Errorf("after the outage the queue holds %v; want during0 and during1 once each", bodies)
	}
}
