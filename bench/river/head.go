package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// With --statements, a Baton lifecycle on PostgreSQL is also sampled while
// it runs, every 100 ms on a connection of its own:
//
//   - the head of its queue: a read of the oldest never-leased visible
//     messages as the receive reads them (the same range of the index of
//     states, without the row locks), which counts the entries it read
//     (pg_stat_get_xact_tuples_returned of the index, read before and
//     after) and the rows it found, and how long the oldest of them has
//     been visible. An entry read without a row is one
//     whose row no snapshot of this read sees: the old version of a
//     message leased or deleted by a committed transaction, not yet marked
//     dead in the index, which every receive walks past (an entry marked
//     dead is skipped within its page, and not counted); and the same of
//     the range the in-flight count reads (lease.go), where the entries of
//     messages deleted while leased stay;
//   - the xmin horizon: the age, in transactions, of the oldest snapshot
//     a backend of the database holds, and the age of the oldest
//     transaction in progress;
//   - the table's dead rows as the statistics have them.
//
// The sampler's own entries read are printed beside the index's figures,
// to be subtracted from them (headSamples.entriesRead).

// headSample is one sample.
type headSample struct {
	read, found int64         // entries of the index of states read, rows found
	headAge     time.Duration // how long the oldest of them has been visible
	// The same of the in-flight range: entries read, rows counted.
	inFlightRead, inFlight int64
	xminAge                int64 // transactions since the oldest backend_xmin
	snapshots              int64 // backends holding a snapshot
	oldestXactAge          time.Duration
	deadRows               int64
}

// headSamples are a lifecycle's samples, and the error that ended them
// early, if one did.
type headSamples struct {
	samples []headSample
	err     error
}

// startSampling samples the queue named queue in the database at url
// into *into until the returned function is called, which waits for the
// sampler (a sampler's error is printed with the samples).
func startSampling(ctx context.Context, url, queue string, into *headSamples) (stop func()) {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		into.samples, into.err = sampleHead(sctx, url, queue)
	}()
	return func() { cancel(); <-done }
}

// sampleHead samples the queue named queue in the database at url until
// ctx ends, and returns the samples.
func sampleHead(ctx context.Context, url, queue string) ([]headSample, error) {
	conn, err := connectSampler(context.WithoutCancel(ctx), url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var out []headSample
	var queueID int64
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return out, nil
		case <-tick.C:
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if queueID == 0 {
			err := conn.QueryRow(sctx, `SELECT id FROM baton_queues WHERE name = $1`, queue).Scan(&queueID)
			if err == pgx.ErrNoRows {
				cancel()
				continue
			}
			if err != nil {
				cancel()
				return out, err
			}
		}
		s, err := sampleOnce(sctx, conn, queueID)
		cancel()
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
}

// sampleOnce takes one sample of the queue queueID.
func sampleOnce(ctx context.Context, conn *pgx.Conn, queueID int64) (headSample, error) {
	var s headSample
	err := conn.QueryRow(ctx, `
		SELECT coalesce(max(age(backend_xmin)), 0), count(backend_xmin),
			coalesce(max(clock_timestamp() - xact_start) FILTER (WHERE state <> 'idle'), '0'),
			coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'baton_messages'), 0)
		FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(
		&s.xminAge, &s.snapshots, &s.oldestXactAge, &s.deadRows)
	if err != nil {
		return s, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return s, err
	}
	defer tx.Rollback(ctx)
	// Both reads must walk the index of states in its order, as the
	// receive does: a plan by another index (once autoanalyze has run,
	// say) would read none of it.
	if _, err := tx.Exec(ctx, `SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off`); err != nil {
		return s, err
	}
	// The functions give what this backend counted and has not yet handed
	// on, over several transactions: the probe's own is the difference.
	const counted = `SELECT pg_stat_get_xact_tuples_returned('baton_messages_by_state'::regclass),
			pg_stat_get_xact_tuples_fetched('baton_messages_by_state'::regclass)`
	var read0, fetched0 int64
	if err := tx.QueryRow(ctx, counted).Scan(&read0, &fetched0); err != nil {
		return s, err
	}
	// sent_at, which the index lacks, keeps this to a plain index scan,
	// as the receive's: its rows are read from the table.
	err = tx.QueryRow(ctx, `
		SELECT count(*), coalesce(clock_timestamp() - min(visible_at), '0') FROM (SELECT pos, visible_at FROM baton_messages
			WHERE queue_id = $1 AND group_id = '' AND NOT leased AND visible_at <= clock_timestamp() AND sent_at > '-infinity'
			ORDER BY visible_at, pos LIMIT 40) h`, queueID).Scan(&s.found, &s.headAge)
	if err != nil {
		return s, err
	}
	var read1, fetched1 int64
	if err := tx.QueryRow(ctx, counted).Scan(&read1, &fetched1); err != nil {
		return s, err
	}
	s.read = read1 - read0
	// The range the in-flight count reads (lease.go), counted the same way.
	if err := tx.QueryRow(ctx, `
		SELECT count(*) FROM (SELECT pos FROM baton_messages
			WHERE queue_id = $1 AND group_id = '' AND leased AND visible_at > clock_timestamp() AND sent_at > '-infinity'
			ORDER BY visible_at, pos) f`, queueID).Scan(&s.inFlight); err != nil {
		return s, err
	}
	var read2, fetched2 int64
	if err := tx.QueryRow(ctx, counted).Scan(&read2, &fetched2); err != nil {
		return s, err
	}
	s.inFlightRead = read2 - read1
	if s.read < s.found || s.inFlightRead < s.inFlight {
		return s, fmt.Errorf("head sample read %d entries for %d rows, %d for %d in flight: not a scan of baton_messages_by_state", s.read, s.found, s.inFlightRead, s.inFlight)
	}
	return s, nil
}

// entriesRead is what the samples read of the index of states.
func (h headSamples) entriesRead() int64 {
	var n int64
	for _, s := range h.samples {
		n += s.read + s.inFlightRead
	}
	return n
}

// write prints the samples' medians and maxima.
func (h headSamples) write(w io.Writer, label string) {
	if h.err != nil {
		fmt.Fprintf(w, "  head samples of %s lifecycle: sampler failed after %d: %v\n", label, len(h.samples), h.err)
	}
	if len(h.samples) == 0 {
		fmt.Fprintf(w, "  head samples of %s lifecycle: none\n", label)
		return
	}
	med := func(get func(headSample) float64) (float64, float64) {
		v := make([]float64, len(h.samples))
		for i, s := range h.samples {
			v[i] = get(s)
		}
		slices.Sort(v)
		return v[len(v)/2], v[len(v)-1]
	}
	dead, deadMax := med(func(s headSample) float64 { return float64(s.read - s.found) })
	found, _ := med(func(s headSample) float64 { return float64(s.found) })
	age, ageMax := med(func(s headSample) float64 { return float64(s.xminAge) })
	snaps, snapsMax := med(func(s headSample) float64 { return float64(s.snapshots) })
	xact, xactMax := med(func(s headSample) float64 { return float64(s.oldestXactAge) / float64(time.Millisecond) })
	headAge, headAgeMax := med(func(s headSample) float64 { return float64(s.headAge) / float64(time.Millisecond) })
	ifDead, ifDeadMax := med(func(s headSample) float64 { return float64(s.inFlightRead - s.inFlight) })
	ifRows, _ := med(func(s headSample) float64 { return float64(s.inFlight) })
	rows, rowsMax := med(func(s headSample) float64 { return float64(s.deadRows) })
	fmt.Fprintf(w, "  head samples of %s lifecycle (%d, median / max): entries read without a row before the first 40 visible %.0f / %.0f (rows found %.0f, the oldest visible for %.0f / %.0f ms);"+
		" the in-flight range: entries read without a row %.0f / %.0f (rows %.0f);"+
		" oldest backend_xmin %.0f / %.0f transactions old, backends holding one %.0f / %.0f, oldest transaction %.1f / %.1f ms; n_dead_tup %.0f / %.0f\n",
		label, len(h.samples), dead, deadMax, found, headAge, headAgeMax, ifDead, ifDeadMax, ifRows, age, ageMax, snaps, snapsMax, xact, xactMax, rows, rowsMax)
}
