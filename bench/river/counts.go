package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// With --statements, a Baton lifecycle on PostgreSQL is also counted: the
// database's counters are reset as the lifecycle starts (its warm-up
// included) and read once its nodes have stopped and their connections
// have ended, which flushes every backend's statistics. The counts are
// given per message sent (rows inserted into the messages' table), so
// that one node and several can be set side by side whatever their rates:
// a busy machine disturbs them far less than it does a time.

// lifecycleCounts is what the database counted over a lifecycle.
type lifecycleCounts struct {
	inserted, deleted                    int64 // rows of baton_messages
	commits, rollbacks, sessions         int64
	tupReturned, tupFetched, blocksHit   int64
	walRecords, walFPI, walBytes         int64
	walWrites, walSyncs                  int64
	statements                           []statementCount
	receives, receivesEmpty, deleteCalls uint64 // HTTP calls in the measured window
	windowMessages                       uint64
	// The messages' table at the end (pg_stat_user_tables).
	deadRows, liveRows, updated, hotUpdated int64
	autovacuums, autoanalyzes               int64
	head                                    headSamples // sampled while it ran (head.go)
	waits                                   waitSamples // with --waits (waits.go)
}

// statementCount is one statement's calls and rows.
type statementCount struct {
	calls, rows int64
	query       string
}

// resetCounts resets the counters of the database at url (its own), and
// through st the WAL's and the statements', before a lifecycle. It waits
// eleven seconds first: a backend hands its counts on at most once a
// second, and one that goes idle less than a second after it last did
// hands the rest on ten seconds later, so the measurements before would
// otherwise land in the lifecycle's.
func resetCounts(ctx context.Context, st statements, url string) error {
	sleep(ctx, 11*time.Second)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err = conn.Exec(ctx, `SELECT pg_stat_reset()`); err != nil {
		return err
	}
	return st.exec(ctx, `SELECT pg_stat_reset_shared('wal'); SELECT pg_stat_statements_reset()`)
}

// readCounts waits for the connections to the database at url to end (at
// most 20 s) and reads its counters, its statements' through st.
func readCounts(ctx context.Context, st statements, url string) (lifecycleCounts, error) {
	var c lifecycleCounts
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return c, err
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(20 * time.Second); ; {
		var others int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
			return c, err
		}
		if others == 0 {
			break
		}
		if time.Now().After(deadline) {
			return c, fmt.Errorf("%d connections to the measured database still open", others)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// This connection's own statistics are flushed when its transaction
	// ends; the reads below are of what the ended backends flushed.
	if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		return c, err
	}
	err = conn.QueryRow(ctx, `
		SELECT d.xact_commit, d.xact_rollback, d.sessions, d.tup_returned, d.tup_fetched, d.blks_hit,
			w.wal_records, w.wal_fpi, w.wal_bytes::bigint, w.wal_write, w.wal_sync,
			coalesce((SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'baton_messages'), 0),
			coalesce((SELECT n_tup_del FROM pg_stat_user_tables WHERE relname = 'baton_messages'), 0)
		FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = current_database()`).Scan(
		&c.commits, &c.rollbacks, &c.sessions, &c.tupReturned, &c.tupFetched, &c.blocksHit,
		&c.walRecords, &c.walFPI, &c.walBytes, &c.walWrites, &c.walSyncs, &c.inserted, &c.deleted)
	if err != nil {
		return c, err
	}
	err = conn.QueryRow(ctx, `
		SELECT n_dead_tup, n_live_tup, n_tup_upd, n_tup_hot_upd, autovacuum_count, autoanalyze_count
		FROM pg_stat_user_tables WHERE relname = 'baton_messages'`).Scan(
		&c.deadRows, &c.liveRows, &c.updated, &c.hotUpdated, &c.autovacuums, &c.autoanalyzes)
	if err != nil {
		return c, err
	}
	var db uint32
	if err := conn.QueryRow(ctx, `SELECT oid FROM pg_database WHERE datname = current_database()`).Scan(&db); err != nil {
		return c, err
	}
	admin, err := pgx.Connect(ctx, st.url)
	if err != nil {
		return c, err
	}
	defer admin.Close(ctx)
	rows, err := admin.Query(ctx, `
		SELECT s.calls, s.rows, s.query FROM pg_stat_statements s
		WHERE s.dbid = $1 AND s.query NOT LIKE '%pg_stat%'
		ORDER BY s.calls DESC`, db)
	if err != nil {
		return c, err
	}
	c.statements, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (statementCount, error) {
		var s statementCount
		err := row.Scan(&s.calls, &s.rows, &s.query)
		return s, err
	})
	return c, err
}

// write prints c per message sent.
func (c lifecycleCounts) write(w io.Writer, label string) {
	if c.inserted <= 0 {
		fmt.Fprintf(w, "  counts of %s lifecycle: no message sent\n", label)
		return
	}
	per := func(n int64) float64 { return float64(n) / float64(c.inserted) }
	fmt.Fprintf(w, "  counts of %s lifecycle per message sent (%d sent, %d deleted, warm-up included):\n", label, c.inserted, c.deleted)
	fmt.Fprintf(w, "    commits %.4f, rollbacks %.4f, connections opened %d, tuples returned %.1f, fetched %.1f, buffers hit %.1f\n",
		per(c.commits), per(c.rollbacks), c.sessions, per(c.tupReturned), per(c.tupFetched), per(c.blocksHit))
	fmt.Fprintf(w, "    WAL records %.2f, full-page images %.3f, bytes %.0f, writes %.4f, flushes %.4f\n",
		per(c.walRecords), per(c.walFPI), per(c.walBytes), per(c.walWrites), per(c.walSyncs))
	fmt.Fprintf(w, "    the messages' table at the end: dead rows %d, live %d; updates %.3f (HOT %.3f); autovacuums %d, autoanalyzes %d\n",
		c.deadRows, c.liveRows, per(c.updated), per(c.hotUpdated), c.autovacuums, c.autoanalyzes)
	c.head.write(w, label)
	if c.waits.counts != nil || c.waits.err != nil {
		c.waits.write(w, label, c.inserted)
	}
	if c.windowMessages > 0 && c.receives > 0 {
		fmt.Fprintf(w, "    in the window: ReceiveMessage calls %.4f per message deleted, of them empty %.1f%%\n",
			float64(c.receives)/float64(c.windowMessages), 100*float64(c.receivesEmpty)/float64(c.receives))
	}
	for _, s := range c.statements {
		if s.calls == 0 {
			continue
		}
		query := strings.Join(strings.Fields(s.query), " ")
		if len(query) > 110 {
			query = query[:110] + "…"
		}
		fmt.Fprintf(w, "    %8.4f calls %7.1f rows/call: %s\n", per(s.calls), float64(s.rows)/float64(s.calls), query)
	}
}
