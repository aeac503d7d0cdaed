package migrate_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	_ "modernc.org/sqlite"

	"github.com/baton-sqs/baton/internal/migrate"
)

var dialect = migrate.Dialect{
	Setup:   `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`,
	Current: `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`,
	Record: func(m migrate.Migration) (string, []any) {
		return `INSERT INTO schema_migrations (version) VALUES (?)`, []any{m.Version}
	},
}

func files(sqls ...string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for i, s := range sqls {
		name := []string{"0001_a.sql", "0002_b.sql", "0003_c.sql"}[i]
		fsys["m/"+name] = &fstest.MapFile{Data: []byte(s)}
	}
	return fsys
}

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func versions(t *testing.T, db *sql.DB) []int {
	t.Helper()
	rows, err := db.Query(`SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestLoad: migrations come back in version order, named without .sql; a
// misnamed file or a gap in the versions is refused.
func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0002_second.sql": {Data: []byte("B")},
		"m/0001_first.sql":  {Data: []byte("A")},
	}
	all, err := migrate.Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	want := []migrate.Migration{{Version: 1, Name: "0001_first", SQL: "A"}, {Version: 2, Name: "0002_second", SQL: "B"}}
	if !slices.Equal(all, want) {
		t.Fatalf("Load = %+v, want %+v", all, want)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"no number": {"m/first.sql": {}},
		"not .sql":  {"m/0001_first.txt": {}},
		"gap":       {"m/0001_a.sql": {}, "m/0003_c.sql": {}},
		"repeat":    {"m/0001_a.sql": {}, "m/0001_b.sql": {}},
	} {
		if _, err := migrate.Load(fsys, "m"); err == nil {
			t.Errorf("%s: Load succeeded", name)
		}
	}
}

// TestRun: Run applies what the database lacks and records it, applies
// nothing twice, stops at a failing migration with the earlier ones kept and
// the failing one undone, and refuses a database newer than it knows.
func TestRun(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	run := func(fsys fstest.MapFS, d migrate.Dialect) error {
		all, err := migrate.Load(fsys, "m")
		if err != nil {
			t.Fatal(err)
		}
		return migrate.Run(ctx, migrate.SQL(db), d, all)
	}

	var applied, applying []string
	d := dialect
	d.Applying = func(m migrate.Migration) { applying = append(applying, m.Name) }
	d.Applied = func(m migrate.Migration) {
		if len(applying) != len(applied)+1 || applying[len(applying)-1] != m.Name {
			t.Errorf("applied %s, having been told it was applying %v", m.Name, applying)
		}
		applied = append(applied, m.Name)
	}
	d.After = func(ctx context.Context, tx migrate.Tx, m migrate.Migration) error {
		if m.Version == 1 {
			return tx.Exec(ctx, `INSERT INTO t VALUES (?)`, "after 1")
		}
		return nil
	}
	if err := run(files(`CREATE TABLE t (v TEXT)`), d); err != nil {
		t.Fatal(err)
	}
	if err := run(files(`CREATE TABLE t (v TEXT)`, `INSERT INTO t VALUES ('two'); INSERT INTO t VALUES ('two again')`), d); err != nil {
		t.Fatal(err)
	}
	if want := []string{"0001_a", "0002_b"}; !slices.Equal(applied, want) || !slices.Equal(applying, want) {
		t.Fatalf("applying %v, applied %v, want %v", applying, applied, want)
	}
	if got := versions(t, db); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("recorded versions %v, want [1 2]", got)
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM t`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("t holds %d rows (%v), want 3", n, err)
	}

	// A failing third migration: its first statement is undone with it.
	err := run(files(`CREATE TABLE t (v TEXT)`, `SELECT 1`, `INSERT INTO t VALUES ('three'); INSERT INTO nowhere VALUES (1)`), dialect)
	if err == nil || !strings.Contains(err.Error(), "0003_c") {
		t.Fatalf("a failing migration: got %v, want an error naming 0003_c", err)
	}
	if got := versions(t, db); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("recorded versions %v after a failure, want [1 2]", got)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM t`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("t holds %d rows (%v) after a failure, want 3", n, err)
	}

	// A binary that knows only the first migration refuses the database.
	err = run(files(`CREATE TABLE t (v TEXT)`), dialect)
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("an older binary: got %v, want an error saying the database is newer", err)
	}
}

// TestNoTransaction: a migration with the line NoTransactionLine runs its
// statements one by one, outside a transaction, after Prepare, and is
// recorded once they all succeeded; one that fails part way stays
// unrecorded, with its statements before the failure done, and the next
// run starts it again from its first statement.
func TestNoTransaction(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	m2 := "-- builds t's index\n" + migrate.NoTransactionLine + "\n" +
		"CREATE INDEX IF NOT EXISTS t_a ON t (a);\nINSERT INTO log VALUES ('sec;ond');\n" +
		"INSERT INTO missing VALUES (1);\n"
	all, err := migrate.Load(files("CREATE TABLE t (a INTEGER); CREATE TABLE log (s TEXT);", m2), "m")
	if err != nil {
		t.Fatal(err)
	}
	if all[0].NoTransaction || !all[1].NoTransaction {
		t.Fatalf("NoTransaction = %v, %v; want false, true", all[0].NoTransaction, all[1].NoTransaction)
	}
	want := []string{"CREATE INDEX IF NOT EXISTS t_a ON t (a)", "INSERT INTO log VALUES ('sec;ond')", "INSERT INTO missing VALUES (1)"}
	if got := all[1].Statements(); !slices.Equal(got, want) {
		t.Fatalf("Statements = %q, want %q", got, want)
	}
	prepared := 0
	d := dialect
	d.Prepare = func(ctx context.Context, db migrate.DB, m migrate.Migration) error {
		prepared++
		return db.Exec(ctx, `INSERT INTO log VALUES ('prepare')`)
	}
	logged := func() []string {
		t.Helper()
		rows, err := db.Query(`SELECT s FROM log ORDER BY rowid`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			rows.Scan(&s)
			out = append(out, s)
		}
		return out
	}
	// The third statement fails: the two before it stay done (no
	// transaction undoes them) and the migration is not recorded.
	if err := migrate.Run(ctx, migrate.SQL(db), d, all); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Run = %v, want the failure of the third statement", err)
	}
	if got := versions(t, db); !slices.Equal(got, []int{1}) {
		t.Fatalf("versions = %v, want [1]", got)
	}
	if got := logged(); !slices.Equal(got, []string{"prepare", "sec;ond"}) {
		t.Fatalf("log = %q, want prepare, sec;ond", got)
	}
	if _, err := db.Exec(`CREATE TABLE missing (a INTEGER)`); err != nil {
		t.Fatal(err)
	}
	// Run again, it starts from the top and is recorded.
	if err := migrate.Run(ctx, migrate.SQL(db), d, all); err != nil {
		t.Fatal(err)
	}
	if got := versions(t, db); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("versions = %v, want [1 2]", got)
	}
	if got := logged(); !slices.Equal(got, []string{"prepare", "sec;ond", "prepare", "sec;ond"}) || prepared != 2 {
		t.Fatalf("log = %q, prepared %d times; want the migration run twice", got, prepared)
	}
}
