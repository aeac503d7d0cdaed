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
