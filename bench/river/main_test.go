package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/pgtest"
)

// TestSideBySide is the program's smoke run: one short run of every system
// (River, the embedded store, the PostgreSQL store on one and two nodes),
// each measuring every workload
// on a throwaway cluster, so that the program keeps building and working.
// Each must have measured something, and the report must say so; the
// figures themselves depend on the machine and are not judged.
func TestSideBySide(t *testing.T) {
	cluster := pgtest.MustStart(t)
	o := options{
		runs: 1, duration: 500 * time.Millisecond, warmup: 100 * time.Millisecond, workers: 4, bodySize: 1024,
		nodes: []int{1, 2}, logs: io.Discard,
		riverFetchCooldown: 2 * time.Millisecond, riverFetchPoll: 20 * time.Millisecond, riverOutstanding: 10,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	figs, err := run(ctx, o, cluster, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 1 {
		t.Fatalf("%d runs measured, want 1", len(figs))
	}
	f := figs[0]
	rates := map[string]float64{
		"river enqueue": f.river.Enqueued, "river worked": f.river.Worked, "river lifecycle": f.river.Lifecycle,
		"embedded enqueue": f.embedded.Enqueued, "embedded receive-delete": f.embedded.Worked, "embedded lifecycle": f.embedded.Lifecycle,
		"postgres x1 enqueue": f.pg[1].Enqueued, "postgres x1 receive-delete": f.pg[1].Worked, "postgres x1 lifecycle": f.pg[1].Lifecycle,
		"postgres x2 enqueue": f.pg[2].Enqueued, "postgres x2 receive-delete": f.pg[2].Worked, "postgres x2 lifecycle": f.pg[2].Lifecycle,
	}
	for name, rate := range rates {
		if rate <= 0 {
			t.Errorf("%s: %.0f/s, want a positive rate", name, rate)
		}
	}
	for _, want := range []string{"run 1: river enqueue", "baton postgres 2 node(s)", "of 1 node", "x2 lifecycle / x1 lifecycle",
		"x1 receive-delete / river worked", "x1 lifecycle / river lifecycle"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestLifecycleCounted: with --statements, a Baton lifecycle on two nodes
// is counted on the database, and only it (not the receive-delete run
// just before it): messages sent, commits, WAL, each statement's calls,
// and the HTTP receives of the window, printed per message sent; and its
// queue's head is sampled while it runs, and with --waits what its
// backends wait on, the samplers' own backends left out.
func TestLifecycleCounted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := options{
		runs: 1, duration: 500 * time.Millisecond, warmup: 100 * time.Millisecond, workers: 4, bodySize: 1024,
		nodes: []int{2}, logs: io.Discard, statements: true, waits: true, fsync: true,
	}
	cluster, err := startCluster(ctx, o)
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	defer cluster.Stop()
	o.cpu, o.statementsDB = cluster.CPUTime, statements{url: cluster.URL("postgres")}
	if err := o.statementsDB.reset(ctx); err != nil {
		t.Fatal(err)
	}
	_, url, err := cluster.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := measureBaton(ctx, o, url, 2)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := readCounts(ctx, o.statementsDB, url)
	if err != nil {
		t.Fatal(err)
	}
	counts.receives, counts.windowMessages = res.Counts.receives, res.Counts.windowMessages
	counts.head, counts.waits = res.Counts.head, res.Counts.waits
	var out bytes.Buffer
	counts.write(&out, "baton postgres x2")
	t.Log("\n" + out.String())
	if counts.inserted <= 0 || counts.commits <= 0 || counts.walRecords <= 0 || counts.receives == 0 {
		t.Errorf("counted %d sent, %d commits, %d WAL records, %d receives: want each positive",
			counts.inserted, counts.commits, counts.walRecords, counts.receives)
	}
	// The lifecycle deletes what it sent, at most: more would be the
	// receive-delete before it, counted in the lifecycle's figures.
	if counts.deleted > counts.inserted {
		t.Errorf("counted %d messages deleted, %d sent: the measurement before leaked into the counts", counts.deleted, counts.inserted)
	}
	calls := int64(0)
	for _, s := range counts.statements {
		if strings.Contains(s.query, "baton_messages") {
			calls += s.calls
		}
	}
	if calls == 0 {
		t.Error("no statement on baton_messages counted")
	}
	if !strings.Contains(out.String(), "per message sent") {
		t.Error("the counts were not printed per message sent")
	}
	// The head of the queue was sampled while the lifecycle ran: its
	// queue found, the oldest messages read through the index of states.
	h := counts.head
	if h.err != nil || len(h.samples) == 0 || h.entriesRead() == 0 {
		t.Errorf("head samples: %d, %d entries read, error %v: want samples that read the index", len(h.samples), h.entriesRead(), h.err)
	}
	// The backends were sampled: some active in a statement of the
	// store's, none of them a sampler's.
	wt := counts.waits
	active := 0
	for k, n := range wt.counts {
		for _, sampler := range []string{"pg_stat", "backend_xmin", "enable_", "min(visible_at)"} {
			if strings.Contains(k.statement, sampler) {
				t.Errorf("a sampler's own backend was sampled: %+v", k)
			}
		}
		if k.state == "active" && k.statement != "" {
			active += n
		}
	}
	if wt.err != nil || wt.samples == 0 || active == 0 {
		t.Errorf("wait samples: %d, %d of active backends, error %v: want samples of the store's statements", wt.samples, active, wt.err)
	}
	if !strings.Contains(out.String(), "wait samples of baton postgres x2 lifecycle") {
		t.Error("the wait samples were not printed")
	}
}
