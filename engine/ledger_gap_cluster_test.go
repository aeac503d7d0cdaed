package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
)

// TestLedgerLinkLostIsSaid: nodes whose connection listening for the
// others' lease events was cut know they may have missed some, and their
// doctor says so rather than judge the leases of that time; 15 minutes on,
// when the window no longer holds the gap, it judges again. They used to
// judge on what they had, which lacks what was missed.
func TestLedgerLinkLostIsSaid(t *testing.T) {
	t.Parallel()
	url := pgtest.MustStart(t).MustDatabase(t)
	nodes, clock := startClusterOn(t, url, 2)
	ctx := context.Background()
	if _, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: "work"}); err != nil {
		t.Fatal(err)
	}
	m := mustReceiveOne(t, nodes[0])
	if err := nodes[0].DeleteMessage(ctx, clusterQueue, m.ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	// The lease's events reach node 2 before the cut: a batch published
	// while its listener is away is missed, and node 2 learns it only from
	// the next batch, 16 minutes on, a gap the window then holds (rightly:
	// the batch's time is bounded only by the next one's).
	testutil.CheckFor(t, 30*time.Second, func() error {
		if r := mustReport(t, nodes[1]); r.Window.Completed != 1 {
			return fmt.Errorf("node 2 has %d leases completed, want node 1's lease", r.Window.Completed)
		}
		return nil
	})

	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%'`); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 30*time.Second, func() error {
		for i, e := range nodes {
			if r := mustReport(t, e); r.Diagnosis != ledger.DiagnosisEvidenceMissed ||
				!strings.Contains(r.Advice, "its link to them was down") {
				return fmt.Errorf("node %d with its link cut: %s: %s", i+1, r.Diagnosis, r.Advice)
			}
		}
		return nil
	})

	clock.Advance(16 * time.Minute)
	if _, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: "more"}); err != nil {
		t.Fatal(err)
	}
	m = mustReceiveOne(t, nodes[1])
	if err := nodes[1].DeleteMessage(ctx, clusterQueue, m.ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	// Once each node has the new lease (the events travel a little late),
	// its window holds no gap.
	testutil.CheckFor(t, 30*time.Second, func() error {
		for i, e := range nodes {
			if r := mustReport(t, e); r.Diagnosis == ledger.DiagnosisEvidenceMissed || r.Window.Completed != 1 {
				return fmt.Errorf("node %d 16 minutes after the gap: %s, %d leases completed in the window: %s",
					i+1, r.Diagnosis, r.Window.Completed, r.Advice)
			}
		}
		return nil
	})
}

// TestLedgerLinkLostAloneJudges: a node alone on its database whose
// listening connection was cut missed no other node's events, and its
// doctor still judges the leases of that time: a lease that lapsed there
// reads as lapsed. It used to say evidence-missed for 15 minutes, with
// advice to ask nodes that did not exist, hiding the lapse it saw itself.
func TestLedgerLinkLostAloneJudges(t *testing.T) {
	t.Parallel()
	url := pgtest.MustStart(t).MustDatabase(t)
	nodes, clock := startClusterOn(t, url, 1)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	listener := func() (pid int, idle bool) {
		t.Helper()
		err := admin.QueryRow(ctx, `SELECT pid, state = 'idle' FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&pid, &idle)
		if err != nil && err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		return pid, idle
	}
	cut, _ := listener()
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, cut); err != nil {
		t.Fatal(err)
	}
	// Once the new connection's LISTEN has been answered, the bus has said
	// what became of the time it was down.
	testutil.CheckFor(t, 30*time.Second, func() error {
		if pid, idle := listener(); pid == 0 || pid == cut || !idle {
			return fmt.Errorf("listening connection %d (idle %v), cut %d: not back yet", pid, idle, cut)
		}
		return nil
	})

	for _, body := range []string{"a", "b", "c"} {
		if _, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: body}); err != nil {
			t.Fatal(err)
		}
		mustReceiveOne(t, nodes[0]) // held, never deleted
	}
	clock.Advance(time.Minute) // the leases of 30 s lapse
	r := mustReport(t, nodes[0])
	if r.Diagnosis == ledger.DiagnosisEvidenceMissed || r.Window.Expired != 3 {
		t.Fatalf("a node alone, its link cut and back: %s, %d leases lapsed (want a verdict on 3): %s",
			r.Diagnosis, r.Window.Expired, r.Advice)
	}
}
