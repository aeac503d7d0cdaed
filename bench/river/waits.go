package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// With --waits (and --statements), a Baton lifecycle on PostgreSQL is also
// sampled for what its database's backends do: every 10 ms a read of
// pg_stat_activity on a connection of its own records each client
// backend's state, what it waits on (wait_event_type and wait_event:
// LWLock:WALWrite, IO:WALSync, Lock:transactionid, Lock:tuple,
// Lock:object for the lock a transaction that notified takes at its
// commit, and so on; a backend active and waiting on nothing is on the
// processor) and its statement's first words. Each sample stands for the
// time since the one before, so a key's count becomes backend time, given
// per message sent like the other counts. The samplers' own connections
// (application_name samplerName) are left out.

// samplerName is the application_name of the bench's sampling
// connections, which the wait sampler leaves out.
const samplerName = "baton-bench-sampler"

// waitInterval is how often the wait sampler reads pg_stat_activity.
const waitInterval = 10 * time.Millisecond

// waitKey is what one backend was doing in one sample.
type waitKey struct {
	state, wait, statement string
}

// waitSamples are a lifecycle's samples of pg_stat_activity.
type waitSamples struct {
	samples int
	elapsed time.Duration
	counts  map[waitKey]int
	err     error
}

// connectSampler connects to url as a sampler, whose backend the wait
// sampler leaves out.
func connectSampler(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = samplerName
	return pgx.ConnectConfig(ctx, cfg)
}

// startWaitSampling samples the backends of the database at url into
// *into until the returned function is called, which waits for the
// sampler.
func startWaitSampling(ctx context.Context, url string, into *waitSamples) (stop func()) {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		into.err = sampleWaits(sctx, url, into)
	}()
	return func() { cancel(); <-done }
}

// sampleWaits samples until ctx ends.
func sampleWaits(ctx context.Context, url string, into *waitSamples) error {
	conn, err := connectSampler(context.WithoutCancel(ctx), url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	into.counts = map[waitKey]int{}
	tick := time.NewTicker(waitInterval)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			into.elapsed = time.Since(start)
			return nil
		case <-tick.C:
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err := sampleWaitsOnce(sctx, conn, into.counts)
		cancel()
		if err != nil {
			into.elapsed = time.Since(start)
			return err
		}
		into.samples++
	}
}

// sampleWaitsOnce adds one sample of the database's client backends to
// counts. An idle backend counts as idle whatever its last statement was.
func sampleWaitsOnce(ctx context.Context, conn *pgx.Conn, counts map[waitKey]int) error {
	rows, err := conn.Query(ctx, `
		SELECT coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, ''), left(query, 200)
		FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend'
			AND application_name <> $1 AND pid <> pg_backend_pid()`, samplerName)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k waitKey
		var query string
		if err := rows.Scan(&k.state, &k.wait, &query); err != nil {
			return err
		}
		if k.state == "idle" {
			k.wait = ""
		} else {
			k.statement = firstWords(query, 6)
		}
		counts[k]++
	}
	return rows.Err()
}

// firstWords is query's first n words.
func firstWords(query string, n int) string {
	f := strings.Fields(query)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

// write prints the backends' time per message sent: by wait, then the
// busiest state, wait and statement together.
func (s waitSamples) write(w io.Writer, label string, sent int64) {
	if s.err != nil {
		fmt.Fprintf(w, "  wait samples of %s lifecycle: sampler failed after %d: %v\n", label, s.samples, s.err)
	}
	if s.samples == 0 || sent <= 0 {
		fmt.Fprintf(w, "  wait samples of %s lifecycle: none\n", label)
		return
	}
	every := s.elapsed / time.Duration(s.samples)
	perMsg := func(n int) float64 { return micros(every*time.Duration(n)) / float64(sent) }
	fmt.Fprintf(w, "  wait samples of %s lifecycle (%d, one every %.1f ms): backends' time per message sent, µs (mean backends):\n",
		label, s.samples, float64(every)/float64(time.Millisecond))
	byWait := map[string]int{}
	for k, n := range s.counts {
		wait := k.wait
		switch {
		case k.state == "idle":
			wait = "idle"
		case wait == "":
			wait = k.state + ", on the processor"
		default:
			wait = k.state + ", " + wait
		}
		byWait[wait] += n
	}
	for _, wait := range sortedByCount(byWait) {
		n := byWait[wait]
		fmt.Fprintf(w, "    %9.1f (%5.2f) %s\n", perMsg(n), float64(n)/float64(s.samples), wait)
	}
	fmt.Fprintf(w, "    busiest, by state, wait and statement:\n")
	busy := map[waitKey]int{}
	for k, n := range s.counts {
		if k.state != "idle" {
			busy[k] = n
		}
	}
	keys := slices.SortedFunc(maps.Keys(busy), func(a, b waitKey) int {
		return cmp.Or(cmp.Compare(busy[b], busy[a]), cmp.Compare(a.state+a.wait+a.statement, b.state+b.wait+b.statement))
	})
	for _, k := range keys[:min(len(keys), 20)] {
		wait := k.wait
		if wait == "" {
			wait = "processor"
		}
		fmt.Fprintf(w, "    %9.1f (%5.2f) %s, %s: %s\n", perMsg(busy[k]), float64(busy[k])/float64(s.samples), k.state, wait, k.statement)
	}
}

// sortedByCount is m's keys, the largest count first.
func sortedByCount(m map[string]int) []string {
	return slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b))
	})
}
