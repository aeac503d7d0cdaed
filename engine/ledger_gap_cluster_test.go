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
