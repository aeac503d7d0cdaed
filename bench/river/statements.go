package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
)

// statementSettings load pg_stat_statements into the cluster (--statements).
var statementSettings = []string{"shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=all",
	"pg_stat_statements.track_planning=on"}

// statements reads pg_stat_statements through the cluster's postgres
// database: reset before a measurement, top after it.
type statements struct{ url string }

func (s statements) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func (s statements) reset(ctx context.Context) error {
	if err := s.exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return err
	}
	return s.exec(ctx, "SELECT pg_stat_statements_reset()")
}

// top prints the statements that took the most execution time since the
// last reset, with their share of it, their planning time, and the WAL
// they wrote (records, bytes).
func (s statements) top(ctx context.Context, w io.Writer, label string, n int) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT calls, total_exec_time, total_exec_time / sum(total_exec_time) OVER (), total_plan_time, plans, rows, shared_blks_hit + shared_blks_read, wal_records, wal_bytes::bigint, query
		FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'
		ORDER BY total_exec_time DESC LIMIT $1`, n)
	if err != nil {
		return err
	}
	defer rows.Close()
	fmt.Fprintf(w, "  statements of %s by execution time:\n", label)
	for rows.Next() {
		var calls, plans, nrows, blocks int64
		var total, share, plan float64
		var walRecords, walBytes int64
		var query string
		if err := rows.Scan(&calls, &total, &share, &plan, &plans, &nrows, &blocks, &walRecords, &walBytes, &query); err != nil {
			return err
		}
		query = strings.Join(strings.Fields(query), " ")
		if len(query) > 160 {
			query = query[:160] + "…"
		}
		fmt.Fprintf(w, "    %5.1f%% %9.0f ms (planning %.0f ms, %d plans) %8d calls %8d rows %9d buffers WAL %d records %d bytes: %s\n", share*100, total, plan, plans, calls, nrows, blocks, walRecords, walBytes, query)
	}
	return rows.Err()
}

// indexReads prints, for each index of the messages' table of the database
// at url (one measurement's, fresh), its scans and the entries they read.
func indexReads(ctx context.Context, w io.Writer, url, label string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT indexrelname, idx_scan, idx_tup_read, idx_tup_fetch FROM pg_stat_user_indexes
		WHERE relname = 'baton_messages' ORDER BY indexrelname`)
	if err != nil {
		return err
	}
	defer rows.Close()
	fmt.Fprintf(w, "  index reads of %s:\n", label)
	for rows.Next() {
		var name string
		var scans, read, fetched int64
		if err := rows.Scan(&name, &scans, &read, &fetched); err != nil {
			return err
		}
		fmt.Fprintf(w, "    %-28s %9d scans %10d entries read %10d rows fetched\n", name, scans, read, fetched)
	}
	return rows.Err()
}
