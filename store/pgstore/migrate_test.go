package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/migrate"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/pgstore"
)

// oldSchema brings the database at url to schema version upTo, as an
// older Baton left it (released0012: 0012 as released), and stores
// n messages in two queues, a tenth with a group id, a tenth in flight.
func oldSchema(t *testing.T, url string, upTo int, released0012 bool, n int) {
	t.Helper()
	pgtest.OldSchema(t, url, "migrations", upTo, released0012)
	conn := pgtest.MustConnect(t, url)
	defer conn.Close(context.Background()) // now: a session left open would look like an old node's
	mustExec(t, conn, `
		INSERT INTO baton_queues (id, account, name, attributes, tags, created_at, modified_at, dedup_scope, fifo, region)
		VALUES (1, '000000000000', 'a', '{}', '{}', now(), now(), 'queue', false, 'us-east-1'),
			(2, '000000000000', 'b', '{}', '{}', now(), now(), 'queue', false, 'us-east-1')`)
	mustExec(t, conn, `
		INSERT INTO baton_messages (queue_id, id, group_id, body, trace_header, dedup_id, sequence_number, sender_id,
			sent_at, dead_letter_source_arn, visible_at, leased)
		SELECT 1 + i % 2, 'm' || i, CASE WHEN i % 10 = 0 THEN 'g' || i % 7 ELSE '' END, 'body', '', '', '', 'sender',
			now(), '', now() + (i % 10 = 1)::int * interval '1 hour', i % 10 = 1
		FROM generate_series(1, $1::int) i`, n)
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// messageIndexes are the indexes of baton_messages: name, definition and
// whether it is valid.
func messageIndexes(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `
		SELECT c.relname || ': ' || pg_get_indexdef(i.indexrelid) || CASE WHEN i.indisvalid THEN '' ELSE ' INVALID' END
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = 'baton_messages'::regclass ORDER BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wantMessageIndexes are the indexes of baton_messages at the last schema
// of a new database, as the migrations run in a transaction, as released,
// left them.
var wantMessageIndexes = []string{
	"baton_messages_by_group: CREATE INDEX baton_messages_by_group ON public.baton_messages USING btree (queue_id, group_id, pos) WHERE (group_id > ''::text)",
	"baton_messages_by_group_state: CREATE INDEX baton_messages_by_group_state ON public.baton_messages USING btree (queue_id, leased, visible_at, pos) WHERE (group_id > ''::text)",
	"baton_messages_by_sent: CREATE INDEX baton_messages_by_sent ON public.baton_messages USING btree (queue_id, sent_at)",
	"baton_messages_by_state: CREATE INDEX baton_messages_by_state ON public.baton_messages USING btree (queue_id, leased, visible_at, pos) WHERE (group_id = ''::text)",
	"baton_messages_pkey: CREATE UNIQUE INDEX baton_messages_pkey ON public.baton_messages USING btree (pos)",
	"baton_messages_queue_id_id_key: CREATE UNIQUE INDEX baton_messages_queue_id_id_key ON public.baton_messages USING btree (queue_id, id)",
}

// Kept for the servers of the release before, on a database upgraded from
// schema 0011 or 0012.
var (
	keptGroups   = "baton_messages_by_group_0012: CREATE INDEX baton_messages_by_group_0012 ON public.baton_messages USING btree (queue_id, group_id, pos)"
	keptStates12 = "baton_messages_by_state_0012: CREATE INDEX baton_messages_by_state_0012 ON public.baton_messages USING btree (queue_id, leased, visible_at, pos)"
	keptStates11 = []string{
		"baton_messages_by_visible: CREATE INDEX baton_messages_by_visible ON public.baton_messages USING btree (queue_id, visible_at, pos)",
		"baton_messages_leased: CREATE INDEX baton_messages_leased ON public.baton_messages USING btree (queue_id, visible_at) WHERE leased",
	}
)

// checkMessageIndexes checks that baton_messages has the indexes of the
// last schema and the kept ones, all valid.
func checkMessageIndexes(t *testing.T, conn *pgx.Conn, kept ...string) {
	t.Helper()
	want := slices.Sorted(slices.Values(append(slices.Clone(wantMessageIndexes), kept...)))
	if got := messageIndexes(t, conn); !slices.Equal(got, want) {
		t.Errorf("indexes of baton_messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMigrationLeavesMessagesWritable: a server upgrading a database of
// schema 0011, or 0012 as released, builds the new indexes of messages
// while other servers go on writing them. A transaction of an old server
// that read the table is open while the migration runs, so that a
// migration taking a lock that conflicts with it waits, holding its locks:
// a plain CREATE INDEX or a DROP INDEX in the migration's transaction then
// holds off every write until that transaction ends. Writes made
// meanwhile (with a lock_timeout, so that a wait fails rather than hangs)
// must go through, and the migration must end with the schema the
// migrations run in a transaction left.
func TestMigrationLeavesMessagesWritable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		upTo     int
		released bool
		kept     []string
	}{{11, false, append([]string{keptGroups}, keptStates11...)}, {12, true, []string{keptGroups, keptStates12}}} {
		t.Run(fmt.Sprint(c.upTo), func(t *testing.T) {
			t.Parallel()
			url := pgtest.MustDatabase(t)
			oldSchema(t, url, c.upTo, c.released, 2000)
			reader := pgtest.MustConnect(t, url)
			mustExec(t, reader, `BEGIN ISOLATION LEVEL REPEATABLE READ`)
			mustExec(t, reader, `SELECT count(*) FROM baton_messages`)

			opened := make(chan error, 1)
			go func() {
				s, err := pgstore.Open(context.Background(), url, quiet)
				if err == nil {
					s.Close()
				}
				opened <- err
			}()
			writer := pgtest.MustConnect(t, url)
			// Wait until the migration waits for the reader.
			deadline := time.Now().Add(2 * time.Minute)
			for {
				var waiting bool
				if err := writer.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_stat_activity
					WHERE datname = current_database() AND application_name = 'baton' AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				if waiting {
					break
				}
				select {
				case err := <-opened:
					t.Fatalf("the migration ended (%v) without waiting for the open transaction", err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the migration did not come to wait for the open transaction")
				}
				time.Sleep(20 * time.Millisecond)
			}
			mustExec(t, writer, `SET lock_timeout = '30s'`)
			mustExec(t, writer, `INSERT INTO baton_messages (queue_id, id, group_id, body, trace_header, dedup_id,
				sequence_number, sender_id, sent_at, dead_letter_source_arn, visible_at)
				VALUES (1, 'during', '', 'b', '', '', '', 's', now(), '', now())`)
			mustExec(t, writer, `UPDATE baton_messages SET leased = true WHERE queue_id = 1 AND id = 'during'`)
			mustExec(t, writer, `DELETE FROM baton_messages WHERE queue_id = 2 AND id = 'm2'`)

			mustExec(t, reader, `COMMIT`)
			if err := <-opened; err != nil {
				t.Fatal(err)
			}
			checkMessageIndexes(t, writer, c.kept...)
		})
	}
}

// TestMigrationRunAgainAfterCut: the last migration run outside a transaction, cut
// short after any of its statements (a crash, a lost connection), or while
// building an index (which PostgreSQL leaves INVALID), is run again from
// the top by the next server to start, and leaves the same schema as one
// run whole. (The cut run's statements run on a session of the test's,
// which sets baton.keep_previous_indexes as the server's does.)
func TestMigrationRunAgainAfterCut(t *testing.T) {
	t.Parallel()
	all, err := migrate.Load(os.DirFS("."), "migrations")
	if err != nil {
		t.Fatal(err)
	}
	// The last migration run outside a transaction; those after it run
	// whole when the store opens.
	var last migrate.Migration
	for _, m := range all {
		if m.NoTransaction {
			last = m
		}
	}
	if !last.NoTransaction {
		t.Fatal("no migration runs outside a transaction; this test cuts one")
	}
	stmts := last.Statements()
	cluster := pgtest.MustShared(t)
	for cut := 0; cut <= len(stmts); cut++ {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			t.Parallel()
			url := cluster.MustDatabase(t)
			oldSchema(t, url, last.Version-1, true, 200)
			conn := pgtest.MustConnect(t, url)
			mustExec(t, conn, `SET baton.keep_previous_indexes = on`)
			for _, st := range stmts[:cut] {
				mustExec(t, conn, st)
			}
			if cut < len(stmts) && strings.HasPrefix(stmts[cut], "CREATE INDEX CONCURRENTLY") {
				// The next build fails part way, leaving its index
				// INVALID: a unique index of values that are not.
				name := strings.Fields(stmts[cut])[6]
				if _, err := conn.Exec(t.Context(), `CREATE UNIQUE INDEX CONCURRENTLY `+name+` ON baton_messages (queue_id)`); err == nil {
					t.Fatal("the unique index of non-unique values was built")
				}
			}
			s, err := pgstore.Open(t.Context(), url, quiet)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			checkMessageIndexes(t, conn, keptGroups, keptStates12)
		})
	}
}

// TestNewDatabaseKeepsNoPreviousIndexes: a database Baton creates has the
// indexes of the last schema alone; none is kept for servers of an
// earlier release, which never used it.
func TestNewDatabaseKeepsNoPreviousIndexes(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	mustOpen(t, url)
	conn := pgtest.MustConnect(t, url)
	checkMessageIndexes(t, conn)
}

// TestPreviousReleaseKeepsItsPlans: on a database upgraded from 0012 as
// released, the statements of the release before 0013, which do not say
// group_id = ” or group_id > ” and so cannot use the partial indexes,
// still read the messages through an index condition on their state
// (visible_at: the indexes 0013 keeps), not by reading the whole table or
// the whole queue (by send time). Plans are generic, as a cached
// statement's, with sequential scans disabled.
func TestPreviousReleaseKeepsItsPlans(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	oldSchema(t, url, 12, true, 20000)
	mustOpen(t, url)
	conn := pgtest.MustConnect(t, url)
	mustExec(t, conn, `ANALYZE baton_messages`)
	mustExec(t, conn, `SET plan_cache_mode = force_generic_plan`)
	mustExec(t, conn, `SET enable_seqscan = off`)
	// The release before's receive scans (requeued and never leased) and
	// its counts of messages in flight and delayed, as it wrote them.
	for i, q := range []struct{ sql, types, args string }{
		{`SELECT pos FROM baton_messages WHERE queue_id = $1 AND leased AND visible_at <= $2 AND sent_at >= $3
			ORDER BY visible_at, pos LIMIT 10 FOR UPDATE SKIP LOCKED`, "bigint, timestamptz, timestamptz", "1, now(), now() - interval '1 day'"},
		{`SELECT pos FROM baton_messages WHERE queue_id = $1 AND NOT leased AND visible_at <= $2 AND sent_at >= $3
			ORDER BY visible_at, pos LIMIT 10 FOR UPDATE SKIP LOCKED`, "bigint, timestamptz, timestamptz", "1, now(), now() - interval '1 day'"},
		{`SELECT count(*) FROM baton_messages WHERE queue_id = $1 AND leased AND visible_at > $2`, "bigint, timestamptz", "1, now()"},
		{`SELECT count(*) FROM (SELECT FROM baton_messages WHERE queue_id = $1 AND NOT leased AND visible_at > $2 LIMIT $3) d`,
			"bigint, timestamptz, bigint", "1, now(), 1000"},
	} {
		name := fmt.Sprintf("old%d", i)
		mustExec(t, conn, `PREPARE `+name+` (`+q.types+`) AS `+q.sql)
		var out string
		if err := conn.QueryRow(t.Context(), `EXPLAIN (FORMAT JSON) EXECUTE `+name+`(`+q.args+`)`).Scan(&out); err != nil {
			t.Fatal(err)
		}
		var plans []struct {
			Plan planNode `json:"Plan"`
		}
		if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
			t.Fatalf("plan %s: %v", out, err)
		}
		for _, bad := range unconditionedScans(plans[0].Plan) {
			t.Errorf("%s\nin the plan of:\n%s", bad, q.sql)
		}
		if conds := indexConds(plans[0].Plan); !slices.ContainsFunc(conds, func(c string) bool { return strings.Contains(c, "visible_at") }) {
			t.Errorf("no index condition on visible_at (%q) in the plan of:\n%s", conds, q.sql)
		}
	}
}

// indexConds are the index conditions of plan's nodes.
func indexConds(n planNode) []string {
	var out []string
	if n.IndexCond != "" {
		out = append(out, n.Index+": "+n.IndexCond)
	}
	for _, c := range n.Plans {
		out = append(out, indexConds(c)...)
	}
	return out
}

// TestMigrationLockWaitSaysWho: a server that finds the migration lock
// held (here by a session of the test's, as a server killed mid-migration
// leaves its session running its statement) waits for it, and says so in
// its log, naming the holder's pid and statement, instead of waiting in
// silence; once the holder ends, it migrates and opens.
func TestMigrationLockWaitSaysWho(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	holder := pgtest.MustConnect(t, url)
	mustExec(t, holder, `SET application_name = 'stuck-migrator'`)
	var pid int32
	if err := holder.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	// The migration lock's key: "baton" in ASCII (store/pgstore/migrate.go).
	mustExec(t, holder, `SELECT pg_advisory_lock(x'626174'::bigint << 16 | x'6f6e'::bigint)`)

	logs := &logbuf.Buffer{}
	opened := make(chan error, 1)
	go func() {
		s, err := pgstore.Open(context.Background(), url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err == nil {
			s.Close()
		}
		opened <- err
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs.String(), "schema migration waits for the migration lock") {
		select {
		case err := <-opened:
			t.Fatalf("Open ended (%v) while the migration lock was held", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line said the server waits for the migration lock within a minute; log:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	line := logs.String()
	for _, want := range []string{fmt.Sprintf("holder_pid=%d", pid), "holder_application=stuck-migrator", "holder_statement=\"SELECT pg_advisory_lock"} {
		if !strings.Contains(line, want) {
			t.Errorf("the wait's log line does not say %s:\n%s", want, line)
		}
	}
	select {
	case err := <-opened:
		t.Fatalf("Open ended (%v) while the migration lock was held", err)
	default:
	}
	if err := holder.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Open did not end within a minute of the migration lock's release")
	}
	if !strings.Contains(logs.String(), "schema migration lock taken") {
		t.Errorf("no log line said the lock was taken in the end:\n%s", logs)
	}
}

// TestMigrationStartAndEndSaid: each migration is logged when it starts,
// naming it and saying it may take long, and when it is applied, with how
// long it took. A long one was silent until it ended.
func TestMigrationStartAndEndSaid(t *testing.T) {
	t.Parallel()
	logs := &logbuf.Buffer{}
	s, err := pgstore.Open(context.Background(), pgtest.MustDatabase(t), pgstore.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var applying string
	n := 0
	for line := range strings.Lines(logs.String()) {
		if m := regexp.MustCompile(`msg="applying schema migration: [^"]*may take minutes[^"]*" migration=(\S+)`).FindStringSubmatch(line); m != nil {
			applying = m[1]
			continue
		}
		m := regexp.MustCompile(`msg="applied schema migration" migration=(\S+) took=(\S+)`).FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n++
		if m[1] != applying {
			t.Errorf("migration %s applied; the line before said %q was being applied", m[1], applying)
		}
		if _, err := time.ParseDuration(m[2]); err != nil {
			t.Errorf("migration %s applied, took=%s: %v", m[1], m[2], err)
		}
	}
	if n == 0 {
		t.Fatalf("no line of a migration applied, with how long it took:\n%s", logs)
	}
}
